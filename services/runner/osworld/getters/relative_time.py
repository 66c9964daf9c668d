"""Relative dates of `rule_relativeTime` (OSWorld `desktop_env/evaluators/getters/misc.py`:
`get_rule_relativeTime`, `apply_rules_to_timeFormat`).

A rule `{"relativeTime": {"from": <name>[, "to": <name>]}, "expected": {...}, "timezone": <tz>}`
names one day (or a from / to pair) relative to today in `timezone`; the day is written into the
`expected` templates, whose placeholders are `{DoW}` (Mon..Sun), `{Month}` (Jan..Dec), `{DayD}`
(day, no padding), `{Year}`, `{Month0D}` (01..12), `{month}` (january..), `{MonthFull}`
(January..), `{Day0D}` (01..31) and `{MonthD}` (1..12), each replaced once. With "from" only, the
template is `expected["time"]`; with "to", `expected["from"]` / `expected["to"]`, or for
"next Monday split" / "next Friday split" the day, month and year fields `puDay` / `puMonth` /
`puYear` and `doDay` / `doMonth` / `doYear`.

Day names and their arithmetic are OSWorld's, quirks included ("this Saturday" on a Sunday is the
day before; "first monday four months later" has no month in August and raises, as OSWorld).
Deliberate difference: without a `timezone`, OSWorld asks ipapi.co for the evaluating host's
timezone and falls back to UTC when that fails; we never call the network at scoring time, so
we always take UTC (OSWorld's answer on an offline host).
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any

import pytz

from services.runner.osworld.errors import EvalError

_DAYS_AHEAD = {"tomorrow": 1}
SPECIAL = frozenset({
    "5th next month", "10th next month", "11th next month", "this month", "this Saturday", "this Sunday",
    "next Monday", "next Friday", "next Saturday", "next Sunday", "next week Friday", "next week Saturday",
    "next week Sunday", "first monday four months later", "first monday eight months later", "next Monday split",
    "next Friday split",
})
"""Day names OSWorld computes case by case (every other known name is a number of days ahead)."""

_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTHS_FULL = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December")


def format_day(template: str, day: datetime) -> str:
    """`template` with the first occurrence of each placeholder replaced by `day`'s value."""
    for token, value in (
        ("{DoW}", _WEEKDAYS[day.weekday()]), ("{Month}", _MONTHS[day.month - 1]), ("{DayD}", str(day.day)),
        ("{Year}", str(day.year)), ("{Month0D}", f"{day.month:02d}"), ("{month}", _MONTHS_FULL[day.month - 1].lower()),
        ("{MonthFull}", _MONTHS_FULL[day.month - 1]), ("{Day0D}", f"{day.day:02d}"), ("{MonthD}", str(day.month)),
    ):
        template = template.replace(token, value, 1)
    return template


def _kind(name: Any) -> str:
    """"days" or "special". Raises: EvalError for a name OSWorld does not know."""
    if name in _DAYS_AHEAD:
        return "days"
    if name in SPECIAL:
        return "special"
    raise EvalError(f"rule_relativeTime: unknown relative time {name!r}")


def _day_of_next_month(now: datetime, zone: Any, day: int) -> datetime:
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    return zone.localize(datetime(year, month, day))


def _first_monday(zone: Any, year: int, month: int) -> datetime:
    try:
        first = zone.localize(datetime(year, month, 1))
    except ValueError as exc:  # OSWorld computes month 0 in August / April and raises
        raise EvalError(f"rule_relativeTime: OSWorld's formula gives month {month} of {year}: {exc}") from exc
    return first + timedelta(days=((6 - first.weekday()) + 1) % 7)


def _single(name: str, now: datetime, zone: Any) -> datetime:
    if _kind(name) == "days":
        return now + timedelta(days=_DAYS_AHEAD[name])
    weekday = now.weekday()
    if name in ("5th next month", "10th next month"):
        return _day_of_next_month(now, zone, 5 if name.startswith("5") else 10)
    if name == "this month":
        return now
    if name == "next Monday":
        return now + timedelta(days=(6 - weekday) + 1)
    if name == "first monday four months later":
        return _first_monday(zone, now.year + 1 if now.month >= 9 else now.year, (now.month + 4) % 12)
    if name == "first monday eight months later":
        return _first_monday(zone, now.year + 1 if now.month >= 5 else now.year, (now.month + 8) % 12)
    raise EvalError(f"rule_relativeTime: {name!r} is not supported as a single day")


def _range_from(name: str, now: datetime, zone: Any) -> datetime:
    if _kind(name) == "days":
        return now + timedelta(days=_DAYS_AHEAD[name])
    weekday = now.weekday()
    ahead = {
        "this Saturday": 5 - weekday,
        "next Monday": (6 - weekday) + 1,
        "next Monday split": (6 - weekday) + 1,
        "next Friday": 4 - weekday if weekday < 4 else 7 if weekday == 4 else (7 - weekday) + 4,
        "next Saturday": 5 - weekday if weekday < 5 else 7 if weekday == 5 else 6,
        "next week Friday": (7 - weekday) + 4,
        "next week Saturday": (7 - weekday) + 5,
        "next week Sunday": (7 - weekday) + 6,
    }
    if name == "10th next month":
        return _day_of_next_month(now, zone, 10)
    if name in ahead:
        return now + timedelta(days=ahead[name])
    raise EvalError(f"rule_relativeTime: {name!r} is not supported as the start of a range")


def _range_to(name: str, start_name: str, start: datetime, now: datetime, zone: Any) -> datetime:
    if _kind(name) == "days":
        return now + timedelta(days=_DAYS_AHEAD[name])
    weekday = now.weekday()
    if name == "this Sunday":
        return now + timedelta(days=6 - weekday)
    if name == "11th next month":
        return _day_of_next_month(now, zone, 11)
    if name in ("next Friday", "next Friday split"):
        if start_name in ("next Monday", "next Monday split"):
            return start + timedelta(days=4)
        return now + timedelta(days=4 - weekday if weekday < 4 else (6 - weekday) + 5)
    if name == "next Sunday":
        if start_name in ("next Friday", "next Saturday"):
            return start + timedelta(days=6 - start.weekday())
        return now + timedelta(days=6 - weekday if weekday < 6 else 7)
    if name == "next week Sunday":
        if start_name in ("next week Friday", "next week Saturday"):
            return start + timedelta(days=6 - start.weekday())
        return now + timedelta(days=(7 - weekday) + 6)
    raise EvalError(f"rule_relativeTime: {name!r} is not supported as the end of a range")


def _fill(expected: dict[str, Any], keys: tuple[str, ...], day: datetime) -> None:
    for key in keys:
        expected[key] = format_day(expected[key], day)


def timezone_of(rules: dict[str, Any]) -> Any:
    """The pytz timezone of `rules["timezone"]`; UTC when absent or unknown (see module docstring)."""
    if "timezone" not in rules:
        return pytz.UTC
    try:
        return pytz.timezone(rules["timezone"])
    except pytz.exceptions.UnknownTimeZoneError:
        return pytz.UTC


def resolve_relative_time(rules: dict[str, Any], now_utc: datetime) -> dict[str, Any]:
    """A copy of `rules` whose `expected` templates hold the days named by `rules["relativeTime"]`,
    counted from the instant `now_utc` (timezone-aware) seen in the rules' timezone.

    Raises: EvalError for unknown day names, missing templates, or days OSWorld cannot compute.
    """
    try:
        resolved = copy.deepcopy(rules)
        relative = resolved["relativeTime"]
        expected = resolved["expected"]
        zone = timezone_of(resolved)
        now = now_utc.astimezone(zone)
        if "to" not in relative.keys():
            _fill(expected, ("time",), _single(relative["from"], now, zone))
            return resolved
        start_name, end_name = relative["from"], relative["to"]
        start = _range_from(start_name, now, zone)
        _fill(expected, ("puDay", "puMonth", "puYear") if start_name == "next Monday split" else ("from",), start)
        end = _range_to(end_name, start_name, start, now, zone)
        _fill(expected, ("doDay", "doMonth", "doYear") if end_name == "next Friday split" else ("to",), end)
        return resolved
    except EvalError:
        raise
    except Exception as exc:  # OSWorld raises too: a missing key or template of the wrong type
        raise EvalError(f"rule_relativeTime: bad rules {rules!r}: {type(exc).__name__}: {exc}") from exc
