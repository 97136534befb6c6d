"""The `ci-registrar` command line: a click group whose subcommands load only when called.

`check` must start fast (it competes with a bare `ast.parse` loop, start-up included), so no
subcommand's module is imported until that subcommand runs.

The base install (`pip install ci-registrar`) carries what `check`, `rule` and `config` need;
`durations`, `audit`, `db`, `check --durations` and `calibrate --durations` need the `store` extra, `serve`, `worker` and
`manifest` the `app` extra. A missing dependency is a one-line error that says which extra to
install, never a traceback.
"""

from __future__ import annotations

import importlib
import sys

import click

# name -> "module:attribute" of a click command or group
SUBCOMMANDS = {
    "check": "bot.commands.check:check",
    "calibrate": "bot.commands.calibrate:calibrate",
    "rule": "bot.commands.rule:rule",
    "config": "bot.commands.config:config",
    "serve": "bot.commands.service:serve",
    "worker": "bot.commands.service:worker",
    "manifest": "bot.commands.service:manifest",
    "db": "bot.commands.db:db",
    "durations": "bot.commands.durations:durations",
    "audit": "bot.commands.audit:audit",
    "run-plan": "bot.commands.run_plan:run_plan",
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

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except Exception as exc:  # noqa: BLE001 - environment failures become one line; bugs re-raise
            from bot.commands.errors import environment_error

            message = environment_error(exc)
            if message is None:
                raise
            name = ctx.invoked_subcommand or ""
            click.echo(f"ci-registrar {name}: {message}" if name else f"ci-registrar: {message}", err=True)
            sys.exit(2)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ci-registrar", prog_name="ci-registrar", message="%(prog)s %(version)s")
def main():
    """CI Registrar: review CI registrations, keep MI355X durations, run ROCm CI on demand."""


if __name__ == "__main__":
    main()
