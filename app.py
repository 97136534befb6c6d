"""`app:create_app()` for a checkout (tests, `gunicorn app:create_app()` by hand); the package's
own entry is bot.webapp, and this file is not installed."""

from bot.webapp import create_app  # noqa: F401
