"""OSWorld `desktop_env/evaluators/getters/chrome.py`, split by concern:

- `profile`: Chrome's profile files read from the env (Preferences, Local State, Bookmarks, History,
  Cookies) and the desktop's shortcuts;
- `urls`: the active tab's URL from the accessibility tree and the getters parsing it;
- `tabs`: the live browser over CDP (open tabs, the active tab reloaded, pages loaded by URL);
- `html_parse`: values read from the DOM of the active tab;
- `recreation`: the recreation.gov task's expected value;
- `googledrive`: Drive files (need credentials: always a clear EvalError offline).

`NEEDS`: the getters that load a web page or read an internet site's live DOM need the internet;
those reading only profile files, the accessibility tree or the tabs' URLs and titles do not.
"""

from __future__ import annotations

from services.runner.osworld.getters.base import Getter
from services.runner.osworld.getters.chrome import googledrive, html_parse, profile, recreation, tabs, urls
from services.runner.osworld.requirements import GOOGLE_DRIVE, INTERNET, Needs, any_web_url

GETTERS: dict[str, Getter] = {
    **profile.GETTERS,
    **urls.GETTERS,
    "open_tabs_info": tabs.get_open_tabs_info,
    "active_tab_info": tabs.get_active_tab_info,
    "page_info": tabs.get_page_info,
    "pdf_from_url": tabs.get_pdf_from_url,
    "info_from_website": tabs.get_info_from_website,
    "active_tab_html_parse": html_parse.get_active_tab_html_parse,
    "gotoRecreationPage_and_get_html_content": recreation.get_gotoRecreationPage_and_get_html_content,
    "googledrive_file": googledrive.get_googledrive_file,
}

NEEDS: dict[str, Needs] = {
    # reloads the active tab's URL (an internet site in every OSWorld task) in a new page
    "active_tab_info": frozenset({INTERNET}),
    # reads the DOM of the open tab showing an internet site
    "active_tab_html_parse": frozenset({INTERNET}),
    "page_info": any_web_url("url"),
    "pdf_from_url": any_web_url("path"),
    "info_from_website": any_web_url("url"),
    "gotoRecreationPage_and_get_html_content": frozenset({INTERNET}),
    "googledrive_file": frozenset({GOOGLE_DRIVE, INTERNET}),
}

__all__ = ["GETTERS", "NEEDS"]
