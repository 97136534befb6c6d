"""The `ci-registrar` command line: a click group whose subcommands load only when called.

`check` must start fast (it competes with a bare `ast.parse` loop, start-up included), so no
subcommand's module is imported until that subcommand runs.
"""

from __future__ import annotations

import importlib

import click

# name -> "module:attribute" of a click command or group
SUBCOMMANDS = {
    "check": "bot.commands.check:check",
    "serve": "bot.commands.service:serve",
    "worker": "bot.commands.service:worker",
    "manifest": "bot.commands.service:manifest",
    "db": "bot.commands.db:db",
    "durations": "bot.commands.durations:durations",
    "audit": "bot.commands.audit:audit",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx, name):
        target = SUBCOMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            return None  # not built yet
        return getattr(module, attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
def main():
    """CI Registrar: review CI registrations, keep MI355X durations, run ROCm CI on demand."""


if __name__ == "__main__":
    main()
