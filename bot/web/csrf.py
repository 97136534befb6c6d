"""The pages' CSRF token (the sign-out form): one random token per browser, kept in the signed
session cookie, so another site can neither read it nor make one that matches."""

from __future__ import annotations

import hmac
import secrets

from flask import session

CSRF_KEY = "csrf"


def csrf_token() -> str:
    token = session.get(CSRF_KEY)
    if not token:
        token = session[CSRF_KEY] = secrets.token_urlsafe(32)
    return token


def csrf_ok(given: str | None) -> bool:
    expected = session.get(CSRF_KEY)
    return bool(expected and given) and hmac.compare_digest(given.encode(), expected.encode())
