"""Saved logins of a stand-in Mozilla (Thunderbird) profile, encrypted with NSS as Thunderbird does: a key
database (`key4.db`, with `cert9.db`, NSS's SQL format) protected by an empty primary
password, and `logins.json` whose `encryptedUsername` / `encryptedPassword` are base64 of
`PK11SDR_Encrypt` output (NSS's Secret Decoder Ring, the same call Thunderbird's login manager makes).

NSS is the machine's `libnss3.so` (Debian `libnss3`, which Thunderbird itself needs), called through
ctypes in a child process (`python3 THIS_FILE DIR`: NSS keeps process-wide state between `NSS_Init` and
`NSS_Shutdown`), so this file uses the standard library only.

Not deterministic: NSS draws the SDR key, the database salts and each ciphertext's IV from its own random
source, so `key4.db`, `cert9.db` and the encrypted fields differ on every call. Everything else of
`logins.json` (ids, GUIDs, times, order) comes from the caller and is deterministic.
"""

from __future__ import annotations

import base64
import ctypes
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: The NSS library (Debian's `libnss3`, found by the dynamic loader).
LIBNSS = "libnss3.so"
#: The files NSS writes into a profile for its SQL databases (`sql:` prefix) that a profile carries; NSS's
#: `pkcs11.txt` is left out: it names the directory it was made in, and NSS writes it again where it opens.
NSS_FILES = ("key4.db", "cert9.db")
#: Milliseconds since the epoch written as a stand-in login's times (2024-01-01T00:00:00Z).
LOGIN_TIME_MS = 1704067200000


@dataclass(frozen=True)
class Login:
    """One saved login: `hostname` (e.g. `imap://outlook.office365.com`, also its `httpRealm` as Thunderbird
    stores mail server logins), `username`, `password`, and the record's `guid` (`{uuid}`)."""

    hostname: str
    username: str
    password: str
    guid: str


class _SECItem(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint), ("data", ctypes.c_void_p), ("len", ctypes.c_uint)]


def _nss_encrypt(directory: str, texts: list[str]) -> list[str]:
    """In this process: create NSS's SQL databases in `directory` (empty primary password) and return
    base64 of `PK11SDR_Encrypt` of each text (UTF-8). Raises: RuntimeError naming the NSS call that failed."""
    nss = ctypes.CDLL(LIBNSS)
    nss.NSS_InitReadWrite.argtypes = [ctypes.c_char_p]
    nss.PK11_GetInternalKeySlot.restype = ctypes.c_void_p
    nss.PK11_NeedUserInit.argtypes = [ctypes.c_void_p]
    nss.PK11_InitPin.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    nss.PK11_FreeSlot.argtypes = [ctypes.c_void_p]
    nss.PK11SDR_Encrypt.argtypes = [ctypes.POINTER(_SECItem), ctypes.POINTER(_SECItem), ctypes.POINTER(_SECItem),
                                    ctypes.c_void_p]
    nss.SECITEM_ZfreeItem.argtypes = [ctypes.POINTER(_SECItem), ctypes.c_int]
    nss.PORT_GetError.restype = ctypes.c_int
    if nss.NSS_InitReadWrite(f"sql:{directory}".encode()) != 0:
        raise RuntimeError(f"NSS_InitReadWrite(sql:{directory}) failed: NSS error {nss.PORT_GetError()}")
    try:
        slot = nss.PK11_GetInternalKeySlot()
        if not slot:
            raise RuntimeError(f"PK11_GetInternalKeySlot failed: NSS error {nss.PORT_GetError()}")
        try:
            if nss.PK11_NeedUserInit(slot) and nss.PK11_InitPin(slot, b"", b"") != 0:
                raise RuntimeError(f"PK11_InitPin (empty primary password) failed: NSS error {nss.PORT_GetError()}")
        finally:
            nss.PK11_FreeSlot(slot)
        blobs = []
        for text in texts:
            data = text.encode("utf-8")
            buffer = ctypes.create_string_buffer(data, len(data))
            plain = _SECItem(0, ctypes.cast(buffer, ctypes.c_void_p), len(data))
            key_id, out = _SECItem(0, None, 0), _SECItem(0, None, 0)
            if nss.PK11SDR_Encrypt(ctypes.byref(key_id), ctypes.byref(plain), ctypes.byref(out), None) != 0:
                raise RuntimeError(f"PK11SDR_Encrypt failed: NSS error {nss.PORT_GetError()}")
            blobs.append(base64.b64encode(ctypes.string_at(out.data, out.len)).decode("ascii"))
            nss.SECITEM_ZfreeItem(ctypes.byref(out), 0)
        return blobs
    finally:
        nss.NSS_Shutdown()


def logins_json(logins: list[Login], blobs: list[str]) -> bytes:
    """`logins.json` as Thunderbird's login manager writes it (format version 3) for `logins`, with
    `blobs` the encrypted username and password of each in turn (`encType` 1: SDR)."""
    records = []
    for number, login in enumerate(logins, start=1):
        user, password = blobs[2 * number - 2], blobs[2 * number - 1]
        records.append({
            "id": number, "hostname": login.hostname, "httpRealm": login.hostname, "formSubmitURL": None,
            "usernameField": "", "passwordField": "", "encryptedUsername": user, "encryptedPassword": password,
            "guid": login.guid, "encType": 1, "timeCreated": LOGIN_TIME_MS, "timeLastUsed": LOGIN_TIME_MS,
            "timePasswordChanged": LOGIN_TIME_MS, "timesUsed": 1, "syncCounter": 0, "everSynced": False,
            "encryptedUnknownFields": None})
    store = {"nextId": len(logins) + 1, "logins": records, "potentiallyVulnerablePasswords": [],
             "dismissedBreachAlertsByLoginGUID": {}, "version": 3}
    return json.dumps(store, separators=(",", ":")).encode()


def login_store(logins: list[Login], timeout_s: float = 60.0) -> dict[str, bytes]:
    """The files of a profile's login store: `key4.db`, `cert9.db` (made by NSS) and
    `logins.json` holding `logins` encrypted with that key database (see the module docstring).

    Raises: RuntimeError when libnss3 is missing or an NSS call fails (the child's message)."""
    texts = [text for login in logins for text in (login.username, login.password)]
    with tempfile.TemporaryDirectory(prefix="standin-nss-") as scratch:
        result = subprocess.run([sys.executable, __file__, scratch], input=json.dumps(texts), capture_output=True,
                                text=True, timeout=timeout_s)
        if result.returncode != 0:
            raise RuntimeError(f"NSS could not make a login store: {result.stderr.strip()[-2000:]}")
        blobs = json.loads(result.stdout)
        files = {name: (Path(scratch) / name).read_bytes() for name in NSS_FILES}
    return {**files, "logins.json": logins_json(logins, blobs)}


if __name__ == "__main__":
    print(json.dumps(_nss_encrypt(sys.argv[1], json.loads(sys.stdin.read()))))
