"""Which handler runs for which event and action: every bot/handlers module's Router, composed.

A job gets a JobContext: the delivery, an authenticated client for its installation, the store.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from functools import cached_property

from gidgethub.routing import Router

import bot.handlers
from bot.logging import get_logger


def handler_modules() -> list[str]:
    return sorted(f"bot.handlers.{m.name}" for m in pkgutil.iter_modules(bot.handlers.__path__) if not m.name.startswith("_"))


def build_router() -> Router:
    routers = []
    for name in handler_modules():
        module = importlib.import_module(name)
        if isinstance(getattr(module, "router", None), Router):
            routers.append(module.router)
    return Router(*routers)


@dataclass
class JobContext:
    delivery_id: str
    event: str
    action: str | None
    installation_id: int | None
    repository: str | None
    settings: object
    github: object  # bot.github.client.GitHub
    store_url: str
    attempt: int = 1
    failure_reporters: list = field(default_factory=list)

    @cached_property
    def client(self):
        """An InstallationClient for this delivery's installation."""
        if self.installation_id is None:
            raise LookupError("this delivery carries no installation")
        return self.github.for_installation(self.installation_id)

    @property
    def log(self):
        return get_logger("ci_registrar.handlers")

    def on_failure(self, target: str, **kwargs) -> None:
        """If this job fails for good, call `target` ("module:function") as target(client, reason, **kwargs).

        Named, not a closure: when GitHub itself is what failed, the report is queued to run later.
        """
        self.failure_reporters.append({"call": target, "kwargs": kwargs})
