"""Structured JSON logs (structlog) carrying the delivery id, installation and repository; secrets redacted."""

from __future__ import annotations

import logging
import re
import sys

import structlog

_SECRET_KEYS = {"token", "private_key", "pem", "webhook_secret", "secret", "client_secret", "authorization", "jwt", "password"}
# Installation tokens (ghs_...), user tokens, JWTs and PEM blocks, wherever they hide in a message.
_SECRET_TEXT = re.compile(
    r"(gh[pousr]_[A-Za-z0-9_]{10,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----)",
    re.S,
)


# Query parameters that carry secrets wherever a URL is logged: the setup link's token, OAuth
# codes and states, signed log URLs. (The access log drops whole query strings: `path_only`.)
_SECRET_PARAMS = re.compile(r"([?&](?:token|code|state|access_token|client_secret|urlSignature|sig)=)[^&\s\"']*",
                            re.I)
# Terminal colour codes (a development server's request lines): a JSON log line is plain text.
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def redact(text: str) -> str:
    return _SECRET_PARAMS.sub(r"\1[redacted]", _SECRET_TEXT.sub("[redacted]", _ANSI.sub("", text)))


def path_only(target: str) -> str:
    """A request target for the access log: the path, with any query string replaced by a mark."""
    path, sep, _query = target.partition("?")
    return path + ("?[redacted]" if sep else "")


def _redact_processor(_logger, _name, event_dict):
    for key in list(event_dict):
        value = event_dict[key]
        if key.lower() in _SECRET_KEYS:
            event_dict[key] = "[redacted]"
        elif isinstance(value, str):
            event_dict[key] = redact(value)
    return event_dict


_configured = False


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (a test's capture, a redirected stream)."""

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


def configure(level: str | None = None) -> None:
    """JSON lines on stderr, for this process's structlog and stdlib loggers (huey, gunicorn) alike,
    at `level`, else CI_REGISTRAR_LOG_LEVEL, else INFO (bot.infra.settings.log_level)."""
    global _configured
    if _configured:
        return
    from bot.infra.settings import log_level

    level = level or log_level()
    _configured = True
    shared = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        _redact_processor,
    ]
    structlog.configure(
        processors=shared + [structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )
    handler = _StderrHandler()
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        processor=structlog.processors.JSONRenderer(), foreign_pre_chain=shared))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("huey").setLevel("WARNING")
    # Alembic announces each plugin and each migration: a screen of lines before the first that
    # matters. bot.store.db logs one line when it migrates.
    logging.getLogger("alembic").setLevel("WARNING")
    logging.getLogger("urllib3").setLevel("WARNING")
    # PyGithub's debug lines carry whole response bodies, the access-token answer among them.
    logging.getLogger("github").setLevel("WARNING")


def get_logger(name: str = "ci_registrar"):
    return structlog.get_logger(name)


bind = structlog.contextvars.bind_contextvars
clear = structlog.contextvars.clear_contextvars
bound = structlog.contextvars.bound_contextvars
