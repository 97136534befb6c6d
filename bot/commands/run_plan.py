"""`ci-registrar run-plan SUITE`: what `/run-rocm SUITE` would dispatch from this checkout.

The same code as the App's command (bot/ondemand/selection.py `select`, checks/target/dispatch_plan.py,
checks/target/run_cost.py `charge`, as the budget charges it), on a checkout that is both the "head" (its test files) and the
"default branch" (its workflows, its runner, its `.github/ci-registrar.yml`). Durations are not
read: each file is costed at its est_time, or at the bound the run enforces when its est_time is
out of bounds (the App may cost such a file at its stored p90 instead).

Exit 0: the plan is printed. Exit 2: the App would refuse the command, with the reason in one line
(no runner of the repository's fleet fits: the line names the largest runner the fleet has).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from bot.commands.errors import fail as _fail_command
from checks.wording import plural


def _fail(message: str) -> None:
    _fail_command("run-plan", message)


@click.command("run-plan")
@click.argument("suite")
@click.argument("more_files", nargs=-1, metavar="[FILE]...")
@click.option("--repo", default=None, metavar="DIR",
              help="The checkout (default: the repository holding the current directory, found as `check` finds it).")
@click.option("--files", "files", multiple=True, metavar="F...",
              help="Run only these test files of the suite (repository-relative); more may follow as arguments.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None, metavar="PATH",
              help="A configuration file to use instead of the checkout's .github/ci-registrar.yml.")
@click.option("--consumers-from", "consumers_from", multiple=True, type=click.Path(dir_okay=False), metavar="PATH",
              help="A local copy of a configured external consumer's workflow (as `check` takes it): the job that "
                   "runs that repository's suites there is read from it. Repeatable.")
def run_plan(suite: str, more_files: tuple[str, ...], repo: str | None, files: tuple[str, ...], fmt: str,
             config_path: str | None, consumers_from: tuple[str, ...]) -> None:
    """Print the plan `/run-rocm SUITE [FILE...]` would dispatch from this checkout: runner labels,
    image, shards, timeouts, command, files, GPUs, GPU-hours and the job it copies."""
    from bot.commands.root import checkout
    from bot.ondemand.selection import NotSelectable, select
    from checks.config.schema import CONFIG_PATH, load_config
    from checks.target.contract import read_contract
    from checks.target.dispatch_plan import plan_lines
    from checks.target.run_cost import charge
    from checks.limits import Budget
    from checks.target.target_ci import read_target_ci
    from checks.scanning.tree import DirectoryTree

    root = checkout("run-plan", repo)
    tree = DirectoryTree(root)
    if config_path is not None:
        try:
            text = Path(config_path).read_bytes()
        except OSError as exc:
            _fail(f"cannot read --config {config_path}: {exc.strerror or exc}")
    else:
        text = tree.read(CONFIG_PATH)
    config, findings = load_config(text)
    if findings:
        where = config_path or CONFIG_PATH
        _fail(f"{where} is invalid: line {findings[0].span.line}: {findings[0].message}")
    external: dict[str, bytes] = {}
    for path in consumers_from:
        try:
            external[path] = Path(path).read_bytes()
        except OSError as exc:
            _fail(f"cannot read --consumers-from {path}: {exc.strerror or exc}")
    budget = Budget()
    contract = read_contract(tree, config, budget)
    target = read_target_ci(tree, config, budget, external)
    listed = list(dict.fromkeys([*files, *more_files]))
    try:
        selection = select(tree, config, contract, suite, listed, "checkout", budget, target=target)
    except NotSelectable as exc:
        message = str(exc).replace(" at checkout", " in this checkout")
        unread = [c for c in config.consumers if c.suites is None]
        if unread and not external and "no workflow" in message:
            message += " (its external consumers were not given: pass --consumers-from PATH)"
        _fail(message)
    run = selection.plan
    costing = charge(selection.registrations, run, est_time_positive=target.contract.est_time_positive)
    if costing.refusal:
        _fail(costing.refusal)
    view = run.as_json(costing.gpu_hours)
    view["notes"] = list(view["notes"]) + list(selection.notes) + costing.notes()
    if fmt == "json":
        click.echo(json.dumps(view, indent=2))
        return
    click.echo(f"/run-rocm {suite}" + (" " + " ".join(listed) if listed else "") + ":")
    for line in plan_lines(view):
        click.echo(f"  {line}")
    click.echo(f"  {plural(len(view['files']), 'test file')}:")
    for name in view["files"]:
        click.echo(f"    {name}")
