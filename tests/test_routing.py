"""The handler modules are listed in bot/routing.py, every one of them, each with its Router."""

from __future__ import annotations

import pkgutil

from gidgethub.routing import Router

import bot.handlers
from bot.routing import HANDLER_MODULES, build_router


def test_every_handler_module_is_listed_and_has_a_router():
    present = {f"bot.handlers.{m.name}" for m in pkgutil.iter_modules(bot.handlers.__path__) if not m.name.startswith("_")}
    assert set(HANDLER_MODULES) == present
    assert isinstance(build_router(), Router)
