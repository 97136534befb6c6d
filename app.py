"""`app:create_app()` for a checkout (tests, `gunicorn app:create_app()` by hand); the package's
own entry is bot.web.webapp, and this file is not installed."""

from bot.web.webapp import create_app  # noqa: F401
