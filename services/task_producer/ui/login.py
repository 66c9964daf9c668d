"""The dashboard's login: a browser cannot send `Authorization: Bearer`, so `/ui/login` takes the producer's
token (`PRODUCER_API_TOKEN`) in a form and sets an HttpOnly, SameSite=Strict cookie (`UI_COOKIE`; Secure over
https) holding a session that expires, never the token (`common.ui_session`), which `deps.require_token`
accepts on `/ui` and `/v1` (the trajectory viewer loads screenshots from `/v1`).
`require_ui_token` sends a browser without a valid token to the login page instead of answering 401.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.security import HTTPAuthorizationCredentials
from fastapi.templating import Jinja2Templates

from common.auth import token_ok
from common.ui_session import SESSION_TTL_S, session_cookie
from services.task_producer.deps import BEARER, UI_COOKIE, get_settings, require_token
from services.task_producer.settings import ProducerSettings

router = APIRouter(prefix="/ui", tags=["dashboard"])
templates = Jinja2Templates(directory=Path(__file__).with_name("templates"))


async def require_ui_token(request: Request,
                           credentials: HTTPAuthorizationCredentials | None = Depends(BEARER)) -> None:
    """`require_token` for dashboard pages. Raises: HTTPException(303) to `/ui/login` when it fails."""
    try:
        await require_token(request, credentials)
    except HTTPException:
        raise HTTPException(303, "log in first", headers={"Location": "/ui/login"}) from None


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request) -> HTMLResponse:
    """The token form."""
    return templates.TemplateResponse(request, "login.html", {"error": None})


@router.post("/login", response_class=HTMLResponse, response_model=None)
def login(request: Request, token: Annotated[str, Form()],
          settings: Annotated[ProducerSettings, Depends(get_settings)]) -> HTMLResponse | RedirectResponse:
    """Check the token; on success set the cookie and go to `/ui`, else show the form again (401)."""
    if not token_ok(token, settings.api_token):
        return templates.TemplateResponse(request, "login.html", {"error": "wrong token (PRODUCER_API_TOKEN)"},
                                          status_code=401)
    response = RedirectResponse("/ui", status_code=303)
    response.set_cookie(UI_COOKIE, session_cookie(token), max_age=SESSION_TTL_S, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/")
    return response
