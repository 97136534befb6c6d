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


def redact(text: str) -> str:
    return _SECRET_TEXT.sub("[redacted]", text)


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


def configure(level: str = "INFO") -> None:
    """JSON lines on stderr, for this process's structlog and stdlib loggers (huey, gunicorn) alike."""
    global _configured
    if _configured:
        return
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
    logging.getLogger("urllib3").setLevel("WARNING")
    # PyGithub's debug lines carry whole response bodies, the access-token answer among them.
    logging.getLogger("github").setLevel("WARNING")


def get_logger(name: str = "ci_registrar"):
    return structlog.get_logger(name)


bind = structlog.contextvars.bind_contextvars
clear = structlog.contextvars.clear_contextvars
bound = structlog.contextvars.bound_contextvars
