"""The Flask app factory (and nothing else): every route lives in a bot/ module."""

from __future__ import annotations

from flask import Flask


def create_app(settings=None) -> Flask:
    from bot.settings import load_settings

    app = Flask(__name__)
    app.config["SETTINGS"] = settings or load_settings()
    return app
