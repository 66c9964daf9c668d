"""The stand-in Thunderbird profile (services/cli/standin_thunderbird.py, standin_nss.py) and the stand-in
of firefox_decrypt (services/cli/standin_firefox_decrypt.py), run as OSWorld's thunderbird/dfac9ee8
evaluator runs them: real NSS (the machine's libnss3) encrypts and decrypts, the tool runs under the
desktop's python3."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from services.cli import standins
from services.cli.standin_thunderbird import ACCOUNT
from tests.cli.standin_profiles import BLANK_URL, DECRYPT_URL, PROFILE_URL, decrypt, extract_profile, forget_login

IMAP = "imap://outlook.office365.com"
HEADER = '"url","user","password"'


def _rows(stdout: str) -> list[list[str]]:
    lines = stdout.splitlines()
    assert lines[0] == HEADER  # firefox_decrypt's CSV: header, every field quoted, "\n" line ends
    return [json.loads(f"[{line}]") for line in lines[1:]]


def test_profile_decrypts_to_the_accounts_logins_and_loses_the_row_when_the_login_is_removed(tmp_path: Path) -> None:
    profile = extract_profile(tmp_path / "home")
    prefs = (profile / "prefs.js").read_text()
    for pref in ('"mail.server.server1.hostname", "outlook.office365.com"', '"mail.server.server1.type", "imap"',
                 f'"mail.identity.id1.useremail", "{ACCOUNT}"', '"mail.accountmanager.accounts", "account1,account2"'):
        assert f"user_pref({pref});" in prefs
    assert {"key4.db", "cert9.db", "logins.json"} <= {p.name for p in profile.iterdir()}
    stored = json.loads((profile / "logins.json").read_text())["logins"]
    assert all(ACCOUNT not in json.dumps(login) for login in stored)  # usernames are encrypted
    result = decrypt(tmp_path / "home", tmp_path)
    assert result.returncode == 0, result.stderr
    rows = _rows(result.stdout)
    assert [row[:2] for row in rows if row[0] == IMAP] == [[IMAP, ACCOUNT]]
    assert [row[:2] for row in rows] == [[IMAP, ACCOUNT], ["smtp://smtp.office365.com", ACCOUNT]]
    assert rows[0][2] == rows[1][2] and rows[0][2] != "password"  # 15c3b339 expects "password" after its setup

    forget_login(profile, IMAP)
    after = decrypt(tmp_path / "home", tmp_path)
    assert after.returncode == 0, after.stderr
    assert [row[0] for row in _rows(after.stdout)] == ["smtp://smtp.office365.com"]


def test_profile_is_deterministic_but_for_what_nss_randomizes() -> None:
    def members(url: str) -> dict[str, bytes]:
        with tarfile.open(fileobj=io.BytesIO(standins.standin_bytes(url, "thunderbird-profile.tar.gz"))) as archive:
            return {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}  # type: ignore[union-attr]

    def plain(files: dict[str, bytes]) -> dict[str, object]:
        """The members without NSS's random bytes: databases left out, ciphertexts blanked."""
        kept: dict[str, object] = {k: v for k, v in files.items() if not k.endswith((".db", "logins.json"))}
        [logins] = [json.loads(v) for k, v in files.items() if k.endswith("logins.json")]
        for login in logins["logins"]:
            login["encryptedUsername"] = login["encryptedPassword"] = ""
        return {**kept, "logins.json": logins}

    first, second = members(PROFILE_URL), members(PROFILE_URL)
    assert first.keys() == second.keys() and plain(first) == plain(second)
    other = members(PROFILE_URL.replace("dd84e895", "00000000"))
    assert plain(other)[".thunderbird/t5q2a5hp.default-release/prefs.js"] != \
        plain(first)[".thunderbird/t5q2a5hp.default-release/prefs.js"]  # the URL's tag: distinct per URL


def test_blank_profile_has_no_account_and_no_saved_login(tmp_path: Path) -> None:
    """thunderbird/15c3b339 asks the agent to add the account: its start profile has none."""
    profile = extract_profile(tmp_path / "home", BLANK_URL)
    assert "mail.server.server1" not in (profile / "prefs.js").read_text()
    assert not (profile / "logins.json").exists()
    result = decrypt(tmp_path / "home", tmp_path)
    assert result.returncode != 0 and result.stdout == ""  # as firefox_decrypt: no key database to open


def test_firefox_decrypt_url_gets_the_tool_for_any_commit_and_other_scripts_stay_generic() -> None:
    tool = standins.standin_bytes(DECRYPT_URL, "firefox_decrypt.py")
    assert b"Stand-in for firefox_decrypt" in tool and b"PK11SDR_Decrypt" in tool
    assert standins.standin_bytes(DECRYPT_URL.replace("3f1a6dce", "0123abcd"), "firefox_decrypt.py") == tool
    assert b"PK11SDR_Decrypt" not in standins.standin_bytes("https://x.test/firefox_decrypt.py", "firefox_decrypt.py")


def test_firefox_decrypt_takes_profile_n_of_profiles_ini(tmp_path: Path) -> None:
    """`-c 2`: the second `[Profile*]` section in the file's order (firefox_decrypt's numbering)."""
    home = tmp_path / "home"
    profile = extract_profile(home)
    (home / ".thunderbird" / "other.default").mkdir()
    ini = home / ".thunderbird" / "profiles.ini"

    def sections(*paths: str) -> str:
        return "".join(f"[Profile{n}]\nName=p{n}\nIsRelative=1\nPath={path}\n\n" for n, path in enumerate(paths))

    ini.write_text(sections("other.default", profile.name))
    result = decrypt(home, tmp_path)
    assert result.returncode == 0 and len(_rows(result.stdout)) == 2, result.stderr
    ini.write_text(sections(profile.name, "missing.default"))
    assert decrypt(home, tmp_path).returncode == 4  # BAD_PROFILEINI: profile 2's directory is missing
