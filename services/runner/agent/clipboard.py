"""Checked clipboard paste: the code that `type(content=...)` runs in the env for text pyautogui cannot
type (`<`, `>`, non-ASCII, several lines).

`paste_text` is not called here: its source (`paste_source()`) is embedded in the generated action
code and runs inside the env's Python (ours or an OSWorld VM's: pyautogui and python-xlib, its X11
backend, plus `xclip`). It replaces the reference agent's `pyperclip.copy(text); hotkey('ctrl', 'v')`,
which races: `xclip` takes the selection asynchronously after it forks, so ctrl+v could paste nothing
or the previous text, and keys pressed after the paste (Enter) could overtake it.

Protocol (ICCCM section 2, "Peer-to-Peer Communication by Means of Selections"):
1. own CLIPBOARD with a window of our own X connection and confirm with GetSelectionOwner (synchronous:
   no race);
2. press ctrl+v, then answer SelectionRequests (TARGETS, UTF8_STRING, TEXT, STRING when the text is
   Latin-1, `text/plain;charset=utf-8`) until the focused application's client has been sent the text;
   its SelectionNotify is queued before any key pressed afterwards, so the paste lands before them (the
   window manager's own reads do not count: GNOME Shell's mutter reads every new owner as a clipboard manager);
3. hand the clipboard to an `xclip` daemon (the clipboard keeps the text after the action, as with
   pyperclip), wait for our SelectionClear and read the clipboard back with `xclip -o`: it must hold
   exactly the text.
Any failure exits with status 1 and a message starting `type:` on stderr (an action error); nothing
is pasted silently wrong.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from functools import cache
from typing import Any

#: Largest text in bytes (UTF-8) sent in one property change; bigger needs ICCCM's INCR transfers.
MAX_PASTE_BYTES = 200_000


def paste_text(text: str, timeout_s: float = 5.0, max_bytes: int = 200_000) -> None:  # noqa: C901 (one protocol)
    """Paste `text` into the focused window through the CLIPBOARD selection (runs in the env).

    `timeout_s`: seconds allowed for each wait (the application's request, xclip's ownership, the read
    back). Raises: SystemExit("type: ...") on any failure, which the env reports as return code 1.
    """
    import select
    import subprocess
    import time

    import pyautogui
    from Xlib import X, Xatom
    from Xlib.display import Display
    from Xlib.protocol import event

    data = text.encode("utf-8")
    if len(data) > max_bytes:
        raise SystemExit(f"type: {len(data)} bytes of text is more than one clipboard transfer ({max_bytes})")
    display = Display()
    display.set_error_handler(lambda *_: None)  # a requestor that vanished must not abort the paste
    try:
        atom = display.intern_atom
        clipboard, targets = atom("CLIPBOARD"), atom("TARGETS")
        utf8 = atom("UTF8_STRING")
        payloads = {utf8: (utf8, data), atom("TEXT"): (utf8, data), atom("text/plain;charset=utf-8"): (utf8, data)}
        try:
            payloads[Xatom.STRING] = (Xatom.STRING, text.encode("latin-1"))
        except UnicodeEncodeError:
            pass  # STRING is Latin-1: refuse it rather than paste a lossy text
        window = display.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
        window.set_selection_owner(clipboard, X.CurrentTime)
        owner = display.get_selection_owner(clipboard)
        if getattr(owner, "id", owner) != window.id:
            raise SystemExit("type: could not take the clipboard selection")
        focus = display.get_input_focus().focus
        mask = display.display.info.resource_id_mask
        check = display.screen().root.get_full_property(atom("_NET_SUPPORTING_WM_CHECK"), Xatom.WINDOW)
        wm_client = check.value[0] & ~mask if check and len(check.value) else None
        # Nothing focused: X's None/PointerRoot, or the 1x1 window mutter (GNOME Shell) focuses then. Mutter reads
        # every new clipboard owner (its clipboard manager), so its reads never count as the paste.
        nothing_focused = isinstance(focus, int) or (
            focus.id & ~mask == wm_client and focus.get_geometry().width <= 1)

        def from_focused_client(requestor: Any) -> bool:
            client = getattr(requestor, "id", 0) & ~mask
            if nothing_focused:
                return client not in (window.id & ~mask, wm_client)
            return bool(client == focus.id & ~mask)

        def next_event(deadline: float) -> Any:
            while display.pending_events() == 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                select.select([display.fileno()], [], [], remaining)
            return display.next_event()

        def answer(request: Any) -> bool:
            """Reply to one SelectionRequest; True when it was sent the text."""
            prop = request.property or request.target
            target = request.target
            sent = False
            if target == targets:
                request.requestor.change_property(prop, Xatom.ATOM, 32, [targets, *payloads])
            elif target in payloads:
                kind, payload = payloads[target]
                request.requestor.change_property(prop, kind, 8, payload)
                sent = True
            else:
                prop = X.NONE
            notify = event.SelectionNotify(time=request.time, requestor=request.requestor,
                                           selection=request.selection, target=target,
                                           property=prop)
            request.requestor.send_event(notify)
            display.sync()  # the reply is queued for the requestor before any later key event
            return sent

        pyautogui.hotkey("ctrl", "v")
        deadline = time.monotonic() + timeout_s
        while True:
            got = next_event(deadline)
            if got is None:
                raise SystemExit(f"type: no application asked for the pasted text within {timeout_s:g} s "
                                 "of ctrl+v (is a text field focused?)")
            kind = got.type
            if kind == X.SelectionClear:
                raise SystemExit("type: another client took the clipboard before the paste was read")
            if kind == X.SelectionRequest and answer(got) and from_focused_client(got.requestor):
                break
        try:
            subprocess.run(["xclip", "-selection", "clipboard"], input=data, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=timeout_s, check=True, start_new_session=True)
        except (OSError, subprocess.SubprocessError) as exc:
            raise SystemExit(f"type: pasted, but xclip could not keep the text on the clipboard: {exc}") from None
        deadline = time.monotonic() + timeout_s
        while True:
            got = next_event(deadline)
            if got is None:
                raise SystemExit(f"type: pasted, but xclip did not take the clipboard within {timeout_s:g} s")
            if got.type == X.SelectionClear:
                break
            if got.type == X.SelectionRequest:
                answer(got)
        back = subprocess.run(["xclip", "-o", "-selection", "clipboard"], capture_output=True, timeout=timeout_s)
        if back.stdout != data:
            raise SystemExit(f"type: pasted, but the clipboard then held {len(back.stdout)} other bytes "
                             f"({back.stderr.decode(errors='replace').strip()})")
    finally:
        display.close()


@cache
def paste_source() -> str:
    """Source of `paste_text` (docstring dropped) to embed in generated action code."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(paste_text)))
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    function.body = function.body[1:]  # the docstring
    for node in ast.walk(function):  # the helpers' docstrings too
        if isinstance(node, ast.FunctionDef) and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str):
            node.body = node.body[1:]
    function.returns = None
    for node in ast.walk(function):  # annotations are noise in the env
        if isinstance(node, ast.arg):
            node.annotation = None
        if isinstance(node, ast.FunctionDef):
            node.returns = None
    return ast.unparse(function)
