"""Signing a test in without GitHub's web flow (that flow itself is tested in tests/bot/web/test_signin.py):
a session row in the store, and the signed cookie a browser would hold for it."""

from __future__ import annotations

SESSION_COOKIE = "cireg_session"


def session_cookie(app, login: str, repositories, installations=()) -> str:
    from bot.store import web_sessions

    settings = app.config["SETTINGS"]
    sid = web_sessions.create(settings.database_url, login, installations, repositories)
    return app.session_interface.get_signing_serializer(app).dumps({"sid": sid, "login": login})


def sign_in(client, app, login: str, repositories, installations=()) -> None:
    """Sign a Flask test client in as `login`, seeing `repositories` and `installations`."""
    client.set_cookie(SESSION_COOKIE, session_cookie(app, login, repositories, installations))
