"""The pages' one way of rendering: Jinja templates (bot/web/templates) under one base layout, escaped
by Jinja itself; friendly error pages for every HTTP error the App answers with HTML."""

from __future__ import annotations

from flask import render_template
from werkzeug.exceptions import HTTPException


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ci-registrar")
    except Exception:
        return ""


def render(template: str, status: int = 200, **context):
    from flask import session

    context.setdefault("title", "CI Registrar")
    context.setdefault("nav", False)
    context.setdefault("viewer", session.get("login") if session else None)
    context.setdefault("version", _version())
    return render_template(template, **context), status


ERROR_TEXT = {
    400: "The request could not be understood.",
    401: "You need to sign in to see this page.",
    403: "You are not allowed to see this page.",
    404: "There is no such page.",
    405: "That method is not allowed here.",
    413: "The request is too large.",
    500: "Something went wrong on this side. It has been logged.",
    502: "GitHub could not be reached or refused the request.",
    503: "The service is not ready.",
}


def error_page(exc: HTTPException):
    """HTML errors for pages; the webhook and the probes keep answering JSON."""
    from flask import request

    if request.path in ("/webhook", "/healthz", "/readyz", "/metrics"):
        return exc
    code = exc.code or 500
    return render("message.html", status=code, title=f"{code} · {exc.name}", error=True,
                  message=ERROR_TEXT.get(code, exc.description or ""), link="/", link_text="Back to the start")


def register(app) -> None:
    from bot.web.csrf import csrf_token

    app.register_error_handler(HTTPException, error_page)
    app.jinja_env.globals["csrf_token"] = csrf_token  # the sign-out form in the base layout
