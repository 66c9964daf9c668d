"""URL comparison shared by the Chrome setup steps and metrics (and any other module that matches URLs).

Semantics of OSWorld `desktop_env/evaluators/metrics/utils.py` (`compare_urls`, `are_lists_equal`),
also used by OSWorld's `SetupController._chrome_close_tabs_setup`.

One deliberate difference: the public suffix list is tldextract's bundled snapshot, never fetched
(OSWorld's default `tldextract.extract` downloads the live list at first use and falls back to the
same snapshot when offline).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import ParseResult, urlparse, urlunparse

import tldextract

_EXTRACT = tldextract.TLDExtract(cache_dir=None, suffix_list_urls=())
"""Offline extractor: bundled public suffix snapshot, no cache file, no network."""

_HAS_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+\-.]*://")


def normalize_url(url: str, full: bool = True) -> str:
    """`url` as OSWorld compares it: `http://` assumed when it has no scheme, scheme lower-cased,
    host reduced to `subdomain.domain` (public suffix dropped, a lone `www` subdomain dropped), a
    path of just `/` dropped; params, query and fragment kept only when `full`."""
    parsed = urlparse(url if _HAS_SCHEME.match(url) else f"http://{url}")
    extracted = _EXTRACT(parsed.netloc.lower())
    subdomain = "" if extracted.subdomain == "www" else extracted.subdomain
    netloc = f"{subdomain}.{extracted.domain}" if subdomain else extracted.domain
    return urlunparse(ParseResult(
        scheme=parsed.scheme.lower(),
        netloc=netloc,
        path=parsed.path if parsed.path != "/" else "",
        params=parsed.params if full else "",
        query=parsed.query if full else "",
        fragment=parsed.fragment if full else "",
    ))


def compare_urls(url1: str | None, url2: str | None, full: bool = True) -> bool:
    """Whether two URLs are the same page after `normalize_url` (None equals only None).

    E.g. `https://www.airbnb.com/` == `http://airbnb.com.sg` is False (schemes differ) but
    `https://www.airbnb.com/` == `https://airbnb.com.sg` is True. Raises TypeError for non-strings
    (as OSWorld's `re.match` does).
    """
    if url1 is None or url2 is None:
        return url1 == url2
    return normalize_url(url1, full) == normalize_url(url2, full)


def are_lists_equal(list1: Sequence[Any], list2: Sequence[Any], comparison_func: Callable[[Any, Any], bool]) -> bool:
    """Same length and every item of `list1` matches some item of `list2` under `comparison_func`
    (OSWorld's check: not a bijection, duplicates in `list1` may match one item of `list2`)."""
    if len(list1) != len(list2):
        return False
    return all(any(comparison_func(a, b) for b in list2) for a in list1)
