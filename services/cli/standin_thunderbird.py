"""The stand-in Thunderbird profile archive (`thunderbird-profile.tar.gz` and the like of OSWorld's tasks,
extracted into the home): `.thunderbird/profiles.ini` and `installs.ini` making `t5q2a5hp.default-release`
(the profile directory OSWorld's getters read) the default of Debian's Thunderbird, and in it what
OSWorld's profile holds where its tasks look:

- `prefs.js` with the mail account OSWorld's tasks name: IMAP `anonym-x2024@outlook.com` on
  `outlook.office365.com` (`account1` / `server1` / identity `id1`, SMTP `smtp1` on `smtp.office365.com`)
  and Local Folders (`account2` / `server2`), so Thunderbird lists the account and can remove it
  (Account Settings > Account Actions > Remove Account); mail checks at startup are off (the machine is
  offline: a login attempt would only raise a connection error);
- the account's saved logins (IMAP and SMTP, a password drawn from the URL's seed) in `logins.json`,
  encrypted with NSS in `key4.db` with an empty primary password, as Thunderbird saves them
  (`standin_nss`), so firefox_decrypt lists them as on OSWorld's VM;
- an empty global message database, `xulstore.json`, empty local folders and IMAP filter rules.

A *blank* profile (an archive named `...-blank...`, e.g. thunderbird/15c3b339's, which asks the agent to
add the account) has no account and no saved login: Thunderbird opens its account setup.

Deterministic for a given seed except the NSS files (`key4.db`, `cert9.db`) and the encrypted fields of
`logins.json`, which NSS randomizes (see `standin_nss`); the cache keeps the first one made.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import uuid
from pathlib import Path
from typing import Any

from services.cli.standin_formats import Seed
from services.cli.standin_nss import Login, login_store

#: The profile directory of OSWorld's Thunderbird profile archives (its tasks' getters name it).
THUNDERBIRD_PROFILE = "t5q2a5hp.default-release"
#: Debian's Thunderbird install hash (CityHash of `/usr/lib/thunderbird`, as Thunderbird writes it).
INSTALL_HASH = "FDC34C9F024745EB"
#: The mail account of OSWorld's Thunderbird profile.
ACCOUNT = "anonym-x2024@outlook.com"
IMAP_HOST = "outlook.office365.com"
SMTP_HOST = "smtp.office365.com"

PROFILES_INI = (f"[Profile0]\nName=default-release\nIsRelative=1\nPath={THUNDERBIRD_PROFILE}\nDefault=1\n\n"
                f"[Install{INSTALL_HASH}]\nDefault={THUNDERBIRD_PROFILE}\nLocked=1\n\n"
                "[General]\nStartWithLastProfile=1\nVersion=2\n")
INSTALLS_INI = f"[{INSTALL_HASH}]\nDefault={THUNDERBIRD_PROFILE}\nLocked=1\n"

#: prefs.js entries of every stand-in profile: no first-run pages or notices.
NO_FIRST_RUN: dict[str, Any] = {
    "mail.shell.checkDefaultClient": False,
    "mail.rights.version": 1,
    "mailnews.start_page.enabled": False,
    "mailnews.start_page_override.mstone": "ignore",
    "datareporting.policy.dataSubmissionPolicyBypassNotification": True,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
}
#: prefs.js entries of the account (Thunderbird's pref names; see the module docstring).
ACCOUNT_PREFS: dict[str, Any] = {
    "mail.account.account1.identities": "id1",
    "mail.account.account1.server": "server1",
    "mail.account.account2.server": "server2",
    "mail.accountmanager.accounts": "account1,account2",
    "mail.accountmanager.defaultaccount": "account1",
    "mail.accountmanager.localfoldersserver": "server2",
    "mail.identity.id1.fullName": "Anonym",
    "mail.identity.id1.smtpServer": "smtp1",
    "mail.identity.id1.useremail": ACCOUNT,
    "mail.identity.id1.valid": True,
    "mail.provider.suppress_dialog_on_startup": True,
    "mail.server.server1.authMethod": 3,
    "mail.server.server1.check_new_mail": False,
    "mail.server.server1.directory-rel": f"[ProfD]ImapMail/{IMAP_HOST}",
    "mail.server.server1.hostname": IMAP_HOST,
    "mail.server.server1.login_at_startup": False,
    "mail.server.server1.name": ACCOUNT,
    "mail.server.server1.port": 993,
    "mail.server.server1.socketType": 3,
    "mail.server.server1.type": "imap",
    "mail.server.server1.userName": ACCOUNT,
    "mail.server.server2.directory-rel": "[ProfD]Mail/Local Folders",
    "mail.server.server2.hostname": "Local Folders",
    "mail.server.server2.name": "Local Folders",
    "mail.server.server2.type": "none",
    "mail.server.server2.userName": "nobody",
    "mail.smtp.defaultserver": "smtp1",
    "mail.smtpserver.smtp1.authMethod": 3,
    "mail.smtpserver.smtp1.hostname": SMTP_HOST,
    "mail.smtpserver.smtp1.port": 587,
    "mail.smtpserver.smtp1.try_ssl": 2,
    "mail.smtpserver.smtp1.username": ACCOUNT,
    "mail.smtpservers": "smtp1",
}


def prefs_js(tag: str, prefs: dict[str, Any]) -> bytes:
    """`prefs.js`: a comment with the stand-in's `tag`, then one `user_pref(name, value);` line per entry
    (sorted, as Thunderbird writes them), values as JSON literals."""
    lines = ["// Mozilla User Preferences", f"// {tag}", ""]
    lines += [f"user_pref({json.dumps(name)}, {json.dumps(value)});" for name, value in sorted(prefs.items())]
    return ("\n".join(lines) + "\n").encode()


def _message_database(seed: Seed) -> bytes:
    """An empty global message database (Gloda's tables OSWorld's `run_sqlite3` checks read), the tag in it."""
    with tempfile.TemporaryDirectory(prefix="standin-tb-") as scratch:
        path = Path(scratch) / "global-messages-db.sqlite"
        connection = sqlite3.connect(path)
        try:
            connection.executescript(
                "CREATE TABLE folderLocations (id INTEGER PRIMARY KEY, folderURI TEXT NOT NULL, dirtyStatus INTEGER, "
                "name TEXT, indexingPriority INTEGER DEFAULT -1);"
                "CREATE TABLE messages (id INTEGER PRIMARY KEY, folderID INTEGER, messageKey INTEGER, "
                "conversationID INTEGER NOT NULL, date INTEGER, headerMessageID TEXT, "
                "deleted INTEGER NOT NULL default 0, jsonAttributes TEXT, notability INTEGER);"
                "CREATE TABLE messageAttributes (conversationID INTEGER NOT NULL, messageID INTEGER NOT NULL, "
                "attributeID INTEGER NOT NULL, value NUMERIC);")
            connection.execute("INSERT INTO folderLocations (folderURI, name) VALUES (?, ?)",
                               (f"mailbox://nobody@Local%20Folders/{seed.words(1)}", seed.tag))
            connection.commit()
        finally:
            connection.close()
        return path.read_bytes()


def account_logins(seed: Seed) -> list[Login]:
    """The account's saved logins (IMAP, SMTP) with a password of seeded words, GUIDs from the seed."""
    password = seed.words(2).replace(" ", "-")
    guids = [f"{{{uuid.UUID(int=seed.rng.getrandbits(128), version=4)}}}" for _ in range(2)]
    return [Login(f"imap://{IMAP_HOST}", ACCOUNT, password, guids[0]),
            Login(f"smtp://{SMTP_HOST}", ACCOUNT, password, guids[1])]


def thunderbird_profile(seed: Seed, blank: bool = False) -> dict[str, bytes]:
    """Members (path relative to the home -> bytes) of a stand-in Thunderbird profile archive (see the
    module docstring); `blank`: without the account and its logins.

    Raises: RuntimeError when NSS cannot make the login store (`standin_nss.login_store`)."""
    root = f".thunderbird/{THUNDERBIRD_PROFILE}"
    prefs = NO_FIRST_RUN if blank else {**NO_FIRST_RUN, **ACCOUNT_PREFS}
    members = {
        ".thunderbird/profiles.ini": PROFILES_INI.encode(),
        ".thunderbird/installs.ini": INSTALLS_INI.encode(),
        f"{root}/prefs.js": prefs_js(seed.tag, prefs),
        f"{root}/global-messages-db.sqlite": _message_database(seed),
        f"{root}/xulstore.json": b"{}",
    }
    if blank:
        return members
    members.update({
        f"{root}/Mail/Local Folders/Bills": b"",
        f"{root}/Mail/Local Folders/Inbox": b"",
        f"{root}/ImapMail/{IMAP_HOST}/msgFilterRules.dat": b'version="9"\nlogging="no"\n',
    })
    members.update({f"{root}/{name}": data for name, data in login_store(account_logins(seed)).items()})
    return members
