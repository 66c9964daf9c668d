"""What a session records of a call, on request and answer bodies (the whole path over HTTP:
tests/model_gateway/test_sessions.py)."""

from __future__ import annotations

import base64
import hashlib
import json

from services.model_gateway.recorder import images_by_reference, prepare_request, request_bytes


def forwarded(raw: bytes) -> dict:
    body = json.loads(raw)
    prepared, _ = prepare_request(body)
    out = request_bytes(raw, body, prepared)
    assert json.loads(out) == prepared
    return {"raw_kept": out.startswith(raw.rstrip()[:-1]), "bytes": out}


def test_the_token_fields_are_written_into_the_raw_body_unless_the_client_sent_one() -> None:
    plain = forwarded(b'{"model": "m", "messages": [{"role": "user", "content": "x"}]}  \n')
    assert plain["raw_kept"] and plain["bytes"].endswith(b',"logprobs": true, "return_token_ids": true, '
                                                         b'"return_tokens_as_token_ids": true}')
    asked = forwarded(b'{"messages": [], "logprobs": true}')
    assert asked["raw_kept"] and b"return_tokens_as_token_ids" not in asked["bytes"]
    refused = forwarded(b'{"messages": [], "logprobs": false}')  # the client's key: serialised again, once
    assert not refused["raw_kept"] and refused["bytes"].count(b'"logprobs"') == 1
    body = {"messages": [], "logprobs": True, "return_token_ids": True}
    raw = json.dumps(body).encode()
    assert request_bytes(raw, body, prepare_request(body)[0]) == raw


def test_inline_images_become_references_to_their_content() -> None:
    png, jpeg = b"\x89PNG fake", b"\xff\xd8 fake"
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": [
        {"type": "text", "text": "t"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(jpeg).decode()}},
        {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,!!!"}}]}]
    out, blobs = images_by_reference(messages)
    png_name, jpeg_name = (f"blob_{hashlib.sha256(png).hexdigest()}.png",
                           f"blob_{hashlib.sha256(jpeg).hexdigest()}.jpg")
    assert blobs == {png_name: png, jpeg_name: jpeg}
    parts = out[1]["content"]
    assert parts[0] == {"type": "text", "text": "t"} and out[0] == messages[0]
    assert parts[1] == {"type": "image_ref", "image_ref": {"name": png_name, "media_type": "image/png", "bytes": 9}}
    assert parts[2]["image_ref"]["name"] == jpeg_name and parts[3] == messages[1]["content"][3]  # http: a reference
    assert "undecodable base64 data URL" in parts[4]["image_ref"]["error"]
