#!/usr/bin/env python3
"""Stand-in for firefox_decrypt (https://github.com/unode/firefox_decrypt, `firefox_decrypt.py`), a tool
this machine cannot fetch (GitHub is unreachable and it is not on PyPI). OSWorld's Thunderbird tasks
download it in their evaluator and run `python3 firefox_decrypt.py ~/.thunderbird -n -c N -f csv -d ,`;
`cua-rollout cache standins` serves this file for that URL. Written for cua-rollout from firefox_decrypt's
documented command line and output (not a copy): the same options for what OSWorld uses, the same exit
codes, the same CSV (header `url,user,password`, every field quoted, `\\n` line ends).

What it does, as firefox_decrypt does: reads `PROFILES_DIR/profiles.ini` (without one, PROFILES_DIR is the
profile), picks profile N (1-based, in the file's order of `[Profile*]` sections; the only one when there is
one), opens its NSS databases (`NSS_Init("sql:PROFILE")` in the machine's libnss3 through ctypes), reads a
primary password from stdin when the key database has one, and decrypts each login of `logins.json` (else
`signons.sqlite`) with `PK11SDR_Decrypt`. Python standard library only, so it runs with the desktop's
python3.
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import json
import logging
import os
import sqlite3
import sys
from base64 import b64decode
from configparser import ConfigParser

LOG = logging.getLogger("firefox_decrypt")

# Exit codes of firefox_decrypt (its `Exit` class).
CLEAN, MISSING_PROFILEINI, MISSING_SECRETS, BAD_PROFILEINI, BAD_SECRETS = 0, 2, 3, 4, 6
FAIL_LOAD_NSS, FAIL_INIT_NSS, FAIL_NSS_KEYSLOT, BAD_PRIMARY_PASSWORD, DECRYPTION_FAILED = 11, 12, 13, 15, 17
MISSING_CHOICE, NO_SUCH_PROFILE = 31, 32


class Exit(Exception):
    """Ends the program with `code` (one of the exit codes above)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class SECItem(ctypes.Structure):
    """NSS's `SECItem` (type, data, len)."""

    _fields_ = [("type", ctypes.c_uint), ("data", ctypes.c_void_p), ("len", ctypes.c_uint)]


class NSS:
    """The NSS calls firefox_decrypt makes, on one profile."""

    def __init__(self) -> None:
        try:
            self.lib = ctypes.CDLL("libnss3.so")
        except OSError as error:
            LOG.error("Couldn't find or load 'libnss3.so': %s", error)
            raise Exit(FAIL_LOAD_NSS) from error
        lib = self.lib
        lib.NSS_Init.argtypes = [ctypes.c_char_p]
        lib.PK11_GetInternalKeySlot.restype = ctypes.c_void_p
        lib.PK11_NeedLogin.argtypes = [ctypes.c_void_p]
        lib.PK11_CheckUserPassword.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.PK11_FreeSlot.argtypes = [ctypes.c_void_p]
        lib.PK11SDR_Decrypt.argtypes = [ctypes.POINTER(SECItem), ctypes.POINTER(SECItem), ctypes.c_void_p]
        lib.SECITEM_ZfreeItem.argtypes = [ctypes.POINTER(SECItem), ctypes.c_int]
        lib.PORT_GetError.restype = ctypes.c_int

    def initialize(self, profile: str) -> None:
        """`NSS_Init("sql:PROFILE")`. Raises: Exit(FAIL_INIT_NSS)."""
        if self.lib.NSS_Init(f"sql:{profile}".encode()) != 0:
            LOG.error("Couldn't initialize NSS, maybe '%s' is not a valid profile? (NSS error %s)", profile,
                      self.lib.PORT_GetError())
            raise Exit(FAIL_INIT_NSS)

    def authenticate(self) -> None:
        """Unlock the key database: with a primary password, read it from stdin (non-interactive use).
        Raises: Exit(FAIL_NSS_KEYSLOT) or Exit(BAD_PRIMARY_PASSWORD)."""
        slot = self.lib.PK11_GetInternalKeySlot()
        if not slot:
            LOG.error("Failed to retrieve internal KeySlot")
            raise Exit(FAIL_NSS_KEYSLOT)
        try:
            if self.lib.PK11_NeedLogin(slot):
                sys.stderr.write("Reading Primary password from standard input:\n")
                password = sys.stdin.readline().rstrip("\n")
                if self.lib.PK11_CheckUserPassword(slot, password.encode()) != 0:
                    LOG.error("Primary password is not correct")
                    raise Exit(BAD_PRIMARY_PASSWORD)
        finally:
            self.lib.PK11_FreeSlot(slot)

    def decrypt(self, data64: str) -> str:
        """The UTF-8 text of base64 SDR ciphertext `data64`. Raises: ValueError when NSS cannot decrypt it."""
        data = b64decode(data64)
        buffer = ctypes.create_string_buffer(data, len(data))
        encrypted, plain = SECItem(0, ctypes.cast(buffer, ctypes.c_void_p), len(data)), SECItem(0, None, 0)
        if self.lib.PK11SDR_Decrypt(ctypes.byref(encrypted), ctypes.byref(plain), None) != 0:
            raise ValueError("Username/Password decryption failed. Credentials damaged or cert/key file mismatch.")
        try:
            return ctypes.string_at(plain.data, plain.len).decode("utf-8")
        finally:
            self.lib.SECITEM_ZfreeItem(ctypes.byref(plain), 0)

    def shutdown(self) -> None:
        """`NSS_Shutdown`."""
        self.lib.NSS_Shutdown()


def credentials(profile: str) -> list[tuple[str, str, str, int]]:
    """(hostname, encrypted user, encrypted password, encType) of each login in `logins.json`, else in
    `signons.sqlite`; records missing a field are skipped. Raises: Exit(MISSING_SECRETS) or Exit(BAD_SECRETS)."""
    path = os.path.join(profile, "logins.json")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        if not isinstance(data, dict) or not isinstance(data.get("logins"), list):
            LOG.error("Unrecognized format in %s", path)
            raise Exit(BAD_SECRETS)
        found = []
        for item in data["logins"]:
            try:
                found.append((item["hostname"], item["encryptedUsername"], item["encryptedPassword"], item["encType"]))
            except KeyError:
                LOG.info("Skipped record %s due to missing fields", item)
        return found
    path = os.path.join(profile, "signons.sqlite")
    if os.path.isfile(path):
        connection = sqlite3.connect(path)
        try:
            return list(connection.execute(
                "SELECT hostname, encryptedUsername, encryptedPassword, encType FROM moz_logins"))
        finally:
            connection.close()
    LOG.error("Couldn't find credentials file (logins.json or signons.sqlite).")
    raise Exit(MISSING_SECRETS)


def choose_profile(basepath: str, choice: str | None, interactive: bool) -> str:
    """The profile directory: `basepath` itself without a `profiles.ini`, else the `[Profile*]` section
    numbered `choice` (the only one when there is one). Raises: Exit with the matching code."""
    ini = os.path.join(basepath, "profiles.ini")
    if not os.path.isfile(ini):
        LOG.warning("profile.ini not found in %s", basepath)
        if not os.path.isdir(basepath):
            LOG.error("Profile location '%s' is not a directory", basepath)
            raise Exit(MISSING_PROFILEINI)
        return basepath
    profiles = ConfigParser()
    profiles.read(ini, encoding="utf-8")
    sections = {str(number): profiles.get(name, "Path")
                for number, name in enumerate((s for s in profiles.sections() if s.startswith("Profile")), start=1)}
    if len(sections) == 1:
        section = sections["1"]
    elif choice is not None:
        if choice not in sections:
            LOG.error("Profile No. %s does not exist!", choice)
            raise Exit(NO_SUCH_PROFILE)
        section = sections[choice]
    elif not interactive:
        LOG.error("Don't know which profile to decrypt. "
                  "We are in non-interactive mode and -c/--choice wasn't specified.")
        raise Exit(MISSING_CHOICE)
    else:
        for number in sorted(sections):
            sys.stderr.write(f"{number} -> {sections[number]}\n")
        section = sections.get(input().strip(), "")
        if not section:
            raise Exit(NO_SUCH_PROFILE)
    profile = os.path.join(basepath, section)
    if not os.path.isdir(profile):
        LOG.error("Profile location '%s' is not a directory. Has profiles.ini been tampered with?", profile)
        raise Exit(BAD_PROFILEINI)
    return profile


def write(records: list[dict[str, str]], args: argparse.Namespace) -> None:
    """Print `records` in the chosen format (`human`, `json`, `csv`, `tabular`) to stdout."""
    if args.format == "json":
        sys.stdout.write(json.dumps(records, indent=2) + "\n")
    elif args.format == "human":
        for record in records:
            sys.stdout.write(f"\nWebsite:   {record['url']}\nUsername: '{record['user']}'\n"
                             f"Password: '{record['password']}'\n")
    else:
        delimiter, quotechar = ("\t", "'") if args.format == "tabular" else (args.csv_delimiter, args.csv_quotechar)
        writer = csv.DictWriter(sys.stdout, fieldnames=["url", "user", "password"], lineterminator="\n",
                                delimiter=delimiter, quotechar=quotechar, quoting=csv.QUOTE_ALL)
        if args.csv_header:
            writer.writeheader()
        writer.writerows(records)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """firefox_decrypt's options that OSWorld uses, plus the other output formats (not `pass`)."""
    parser = argparse.ArgumentParser(description="Access Firefox/Thunderbird profiles and decrypt existing "
                                                 "passwords (cua-rollout stand-in of firefox_decrypt)")
    parser.add_argument("profile", nargs="?", default="~/.mozilla/firefox", help="Path to profile folder")
    parser.add_argument("-f", "--format", choices=("human", "json", "csv", "tabular"), default="human")
    parser.add_argument("-d", "--csv-delimiter", default=";")
    parser.add_argument("-q", "--csv-quotechar", default='"')
    parser.add_argument("--no-csv-header", action="store_false", dest="csv_header", default=True)
    parser.add_argument("-n", "--no-interactive", action="store_false", dest="interactive", default=True)
    parser.add_argument("--non-fatal-decryption", action="store_true", default=False)
    parser.add_argument("-c", "--choice", help="The profile to use (starts with 1).")
    parser.add_argument("-l", "--list", action="store_true", help="List profiles and exit.")
    parser.add_argument("-v", "--verbose", action="count", default=0)
    args = parser.parse_args(argv)
    if args.csv_delimiter == "\\t":
        args.csv_delimiter = "\t"
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the program; returns the exit code."""
    args = parse_args(argv)
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(message)s",
                        level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)])
    try:
        basepath = os.path.expanduser(args.profile)
        if args.list:
            profiles = ConfigParser()
            if not profiles.read(os.path.join(basepath, "profiles.ini"), encoding="utf-8"):
                raise Exit(MISSING_PROFILEINI)
            names = [profiles.get(s, "Path") for s in profiles.sections() if s.startswith("Profile")]
            sys.stdout.write("".join(f"{number} -> {name}\n" for number, name in enumerate(names, start=1)))
            return CLEAN
        nss = NSS()
        profile = choose_profile(basepath, args.choice, args.interactive)
        nss.initialize(profile)
        nss.authenticate()
        records = []
        for url, user, password, enctype in credentials(profile):
            if enctype:
                try:
                    user, password = nss.decrypt(user), nss.decrypt(password)
                except ValueError as error:
                    if not args.non_fatal_decryption:
                        LOG.error("%s", error)
                        raise Exit(DECRYPTION_FAILED) from error
                    LOG.warning("Failed to decode username or password for entry from URL %s", url)
                    user = password = "*** decryption failed ***"
            records.append({"url": url, "user": user, "password": password})
        if not records:
            LOG.warning("No passwords found in selected profile")
        write(records, args)
        nss.shutdown()
    except Exit as done:
        return done.code
    return CLEAN


if __name__ == "__main__":
    sys.exit(main())
