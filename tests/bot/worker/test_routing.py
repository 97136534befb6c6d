"""The handler modules are listed in bot/worker/routing.py, every one of them, each with its Router."""

from __future__ import annotations

import pkgutil

from gidgethub.routing import Router

import bot.worker.handlers
from bot.worker.routing import HANDLER_MODULES, build_router


def test_every_handler_module_is_listed_and_has_a_router():
    present = {f"bot.worker.handlers.{m.name}" for m in pkgutil.iter_modules(bot.worker.handlers.__path__) if not m.name.startswith("_")}
    assert set(HANDLER_MODULES) == present
    assert isinstance(build_router(), Router)
