"""For running gunicorn by hand (`gunicorn -c deploy/gunicorn.conf.py`): the settings, hooks and
first-run output of `ci-registrar serve --no-worker` (bot/web/server.py), which is what the Procfile,
compose and the image run. Prefer that command; this file only keeps the two from drifting."""

import os

from bot.web.server import DEFAULT_HOST, DEFAULT_PORT, settings_for

wsgi_app = "bot.web.webapp:create_app()"
globals().update(settings_for(os.environ.get("HOST", DEFAULT_HOST), int(os.environ.get("PORT", DEFAULT_PORT)), jobs=0))
