"""What a reload request may carry (services/model_gateway/reload_methods.py `check_version`, `check_source`)."""

from __future__ import annotations

import pytest

from services.model_gateway.reload_methods import MAX_SOURCE_CHARS, check_source, check_version, make_method


@pytest.mark.parametrize("version", ["v1", "step-1000", "2024.06.01+lora", "v1 hot"])
def test_versions_that_travel_as_a_header(version: str) -> None:
    assert check_version(version) == version


@pytest.mark.parametrize("version", ["@\u0093", "v\u00e9", "v1\r\nX: 1", " v1", "v1 ", "v1\t", "a  b", "\x00"])
def test_versions_that_cannot_travel_as_a_header(version: str) -> None:
    with pytest.raises(ValueError, match="cannot travel as an HTTP header"):
        check_version(version)


@pytest.mark.parametrize("source", ["/ckpt/v1", "/models/\u00fcber/adapter", "s3://bucket/ckpt/v1",
                                    "hf://org/model", "org/model-7B", "checkpoints/step_100", "file:///x"])
def test_loadable_sources(source: str) -> None:
    assert check_source(source) == source


@pytest.mark.parametrize(("source", "problem"), [
    ("\u1234\U0001f600", "not loadable"), ("ckpt v1", "not loadable"), ("/ckpt/\x00", r"U\+0000"),
    ("/a\u200bb", r"U\+200B"), ("/ckpt/\ue000", r"U\+E000"), (" /ckpt", "outer blanks"),
    ("/" + "a" * MAX_SOURCE_CHARS, "at most"),
])
def test_sources_that_are_not_loadable(source: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        check_source(source)


def test_a_method_that_cannot_run_says_why() -> None:
    assert make_method("command", "").problem() == "method 'command' needs GATEWAY_RELOAD_COMMAND (it is empty)"
    assert make_method("command", "true").problem() is None and make_method("vllm_lora").problem() is None
