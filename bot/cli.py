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


# Commands whose process ends with their report: after one, the console script leaves without
# the interpreter's teardown (freeing every object one by one: the parsed trees, the scans), as
# mypy does. `check` is the command a user and a pre-commit hook wait on; `calibrate` is a check
# plus a season of stored runs (tens of thousands of objects), whose teardown cost it a tenth more.
ENDS_WITH_ITS_REPORT = {"check", "calibrate"}


def run() -> None:
    """The console script `ci-registrar`: `main` (click, standalone: it always ends in SystemExit),
    then, after a command of ENDS_WITH_ITS_REPORT, os._exit with the same status once the output
    streams are flushed. Tests call `main` (CliRunner), never this."""
    ends_with_report = bool(sys.argv[1:2]) and sys.argv[1] in ENDS_WITH_ITS_REPORT
    if ends_with_report:
        # A check allocates many short-lived syntax-tree nodes, which reference counting
        # frees; the cyclic collector's default (a pass every 700 new containers) spent about 2%
        # of miles' first check finding nothing. It still runs, 30 times less often.
        import gc

        gc.set_threshold(20_000, 20, 20)
    try:
        main()
    except SystemExit as exc:
        if ends_with_report:
            _leave(exc.code)
        raise


def _leave(code) -> None:
    import os

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message goes to stderr and the status is 1, as Python does
        print(code, file=sys.stderr)
        status = 1
    if "logging" in sys.modules:  # flush any log handler (a check that logged nothing never loaded it)
        sys.modules["logging"].shutdown()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # a reader that closed the pipe, a closed stream
        status = status or 1
    os._exit(status)


if __name__ == "__main__":
    run()
