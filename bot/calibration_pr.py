"""The calibration pull request: one per repository, on a fixed branch, kept in step with the store.

What `ci-registrar calibrate --write` would change on the default branch is committed by the App
through the Git Data API (a blob per edited file, one tree on the default branch's tree, one
commit, the branch ref) and shown in one pull request:
- none open and something to change: the branch is (re)pointed and the pull request opened;
- open, and the values changed: the branch is force-moved to a new commit on the current default
  branch and the body rewritten, in place;
- open, and nothing left to change: closed, with a comment saying why;
- closed by someone else with these very values: left closed, until the values change again.

The body carries a fingerprint of the values it proposes (an HTML comment), so none of this needs
state of its own. The policy and the edits are checks/ (checks/calibration.py,
checks/calibration_edits.py); this module only reads and writes GitHub.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime

from typing import TYPE_CHECKING

from bot.github.retry import GitHubError
from bot.logging import get_logger
from checks.config import CONFIG_PATH, load_config
from checks.wording import plural

if TYPE_CHECKING:  # the policy, the edits (libcst) and the shards load only when a refresh runs
    from checks.calibration import Decision, Plan

log = get_logger("ci_registrar.calibration")

BRANCH = "ci-registrar/calibrate-est-time"
TITLE = "Calibrate est_time from stored MI355X durations"
_MARK = re.compile(r"<!-- ci-registrar calibration: ([0-9a-f]{16}|none) -->")
CLOSED_NOTICE = ("Nothing is left to calibrate: every est_time this pull request changed now fits the stored "
                 "durations (or was changed on the default branch). Closing it; a new one opens when values drift.")
NO_PERMISSION = ("The calibration pull request needs the App's `contents: write` permission (to commit the new "
                 "est_time values on the branch `{branch}`), which this installation has not granted. Nothing was "
                 "changed. Run `ci-registrar calibrate --durations --write` on a checkout instead (docs/calibration.md).")


@dataclass
class Outcome:
    action: str  # opened | updated | unchanged | closed | kept-closed | nothing | no-permission
    number: int | None = None
    changes: int = 0
    message: str = ""
    every_days: float = 7  # the repository's calibration.pull_request_every_days


def _outcome_with(every_days: float):
    def make(action: str, number: int | None = None, changes: int = 0, message: str = "") -> Outcome:
        return Outcome(action, number, changes, message, every_days)
    return make


def fingerprint(decisions: list["Decision"]) -> str:
    values = sorted((d.registration.file, d.registration.anchor("est_time").line, d.old, d.new) for d in decisions)
    return hashlib.sha256(json.dumps(values).encode()).hexdigest()[:16]


def _marker(body: str | None) -> str | None:
    m = _MARK.search(body or "")
    return m.group(1) if m else None


def _fmt(v) -> str:
    if v is None:
        return "-"
    return f"{v:g}" if float(v).is_integer() else f"{v:.0f}"


def render_body(plan: "Plan", windows, uses, registrations, changes_print: str, params) -> str:
    """The table per suite (file, old, new, n, p90, max, why) and each suite's totals before and
    after, against its consumers' timeouts and shard counts, the view REG030 takes."""
    from checks.shards import Item, heaviest, partition

    lines = [
        "Proposed by CI Registrar from the stored durations on "
        f"{params.hardware} (last {params.window_runs} passing runs within {params.window_days} days; "
        "docs/calibration.md): only what REG020 flags, never below a passing run, never lowered after a timeout.",
        "",
    ]
    by_suite: dict[str, list] = {}
    for d in plan.changes:
        by_suite.setdefault(d.registration.suite or "(no suite)", []).append(d)
    new_of = {d.registration.file: d.new for d in plan.changes}
    for suite in sorted(by_suite):
        lines += [f"### `{suite}`", "", "| file | old | new | n | p90 | max | why |", "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
        for d in by_suite[suite]:
            lines.append(f"| `{d.registration.file}` | {_fmt(d.old)} | {_fmt(d.new)} | {d.n} | {_fmt(d.p90)} | {_fmt(d.max)} | {d.reason} |")
        regs = [r for r in registrations if r.suite == suite and r.disabled is None and r.est_time is not None]
        before = sum(r.est_time for r in regs)
        after = sum(new_of.get(r.file, r.est_time) for r in regs)
        lines += ["", f"Suite total est_time: {before:g} s -> {after:g} s over {plural(len(regs), 'file')}."]
        for use in [u for u in uses if u.suite == suite and u.shards >= 1]:
            def predicted(est_of):
                items = []
                for r in regs:
                    w = windows.get((r.file, r.backend.family))
                    seconds = w.stats.p90 if w and w.stats.n >= params.min_samples else est_of(r)
                    items.append(Item(r.file, est_of(r), seconds))
                return heaviest(partition(items, use.shards)).predicted
            timeout = (use.timeout_minutes or 360) * 60
            old_worst = predicted(lambda r: r.est_time)
            new_worst = predicted(lambda r: new_of.get(r.file, r.est_time))
            lines.append(f"- {use.consumer}: {plural(use.shards, 'shard')}, timeout {timeout // 60} min; predicted heaviest shard "
                         f"{old_worst / 60:.0f} min -> {new_worst / 60:.0f} min"
                         + (" (over the timeout)" if new_worst > timeout else ""))
        lines.append("")
    lines.append(f"<!-- ci-registrar calibration: {changes_print} -->")
    return "\n".join(lines)


def refresh(client, repo: str, records, *, now: datetime | None = None, require_enabled: bool = True) -> Outcome:
    """Bring the repository's calibration pull request in line with `records` (`durations export` rows).

    require_enabled: do nothing (`disabled`) unless the default branch's configuration sets
    `calibration.pull_requests` (tests pass False to exercise the cycle on any configuration)."""
    from bot.sources import GitHubTree
    from checks.calibration import Bounds, Plan, build_windows, decide_all, stats_rows
    from checks.calibration_edits import plan_edits
    from checks.engine import build_context, check_tree

    info = client.get_json(f"/repos/{repo}", "/repos/{owner}/{repo}")
    default = info["default_branch"]
    owner = repo.split("/")[0]
    head = client.get_json(f"/repos/{repo}/git/ref/heads/{default}", "/repos/{owner}/{repo}/git/ref/{ref}")["object"]["sha"]
    tree = GitHubTree(client, repo, head)
    config, errors = load_config(tree.read(CONFIG_PATH))
    if errors:
        return Outcome("nothing", message=f"{CONFIG_PATH} is invalid: {errors[0].message}")
    params = config.calibration
    outcome = _outcome_with(params.pull_request_every_days)
    if require_enabled and not params.pull_requests:
        return outcome("disabled", message="calibration.pull_requests is not set in the default branch's "
                                           f"{CONFIG_PATH}: the App opens no calibration pull request")
    if callable(records):
        records = records()
    windows = build_windows(records, params, now=now, repository=repo)
    report = check_tree(tree, config_text=tree.read(CONFIG_PATH), durations=stats_rows(windows, params.hardware), fixes=False)
    ctx, _paths, _findings = build_context(tree, config)
    plan = Plan(decide_all(report.registrations, windows, params, Bounds.of(ctx.contract)))
    changes_print = fingerprint(plan.changes)

    pulls = client.pulls_from(repo, f"{owner}:{BRANCH}")
    latest = pulls[0] if pulls else None
    open_pr = latest if latest and latest["state"] == "open" else None

    if not plan.changes:
        if open_pr is None:
            return outcome("nothing")
        client.comment(repo, open_pr["number"], CLOSED_NOTICE)
        client.update_pull(repo, open_pr["number"], {"state": "closed", "body": (open_pr.get("body") or "").split("<!-- ci-registrar")[0]
                                                     + "<!-- ci-registrar calibration: none -->"})
        return outcome("closed", open_pr["number"])
    if open_pr is not None and _marker(open_pr.get("body")) == changes_print:
        return outcome("unchanged", open_pr["number"], len(plan.changes))
    if open_pr is None and latest is not None and not latest.get("merged_at") and _marker(latest.get("body")) == changes_print:
        return outcome("kept-closed", latest["number"], len(plan.changes))  # a maintainer closed it: not again

    edits = plan_edits(plan.changes, lambda path: tree.read(path).decode("utf-8"))
    try:
        entries = [{"path": e.path, "mode": "100644", "type": "blob", "sha": client.create_blob(repo, e.after.encode("utf-8"))}
                   for e in edits]
    except GitHubError as exc:
        if exc.status in (403, 404):
            return outcome("no-permission", open_pr["number"] if open_pr else None, len(plan.changes),
                           NO_PERMISSION.format(branch=BRANCH))
        raise
    base_tree = client.tree(repo, head)["sha"]
    new_tree = client.create_tree(repo, base_tree, entries)
    message = f"Calibrate {plural(len(plan.changes), 'est_time value')} from stored {params.hardware} durations\n\n" + "\n".join(
        f"{d.registration.file}:{d.registration.anchor('est_time').line}: {_fmt(d.old)} -> {_fmt(d.new)} ({d.reason})"
        for d in plan.changes)
    commit = client.create_commit(repo, message, new_tree, [head])
    body = render_body(plan, windows, ctx.uses, report.registrations, changes_print, params)
    if open_pr is not None:
        client.update_ref(repo, BRANCH, commit, force=True)
        client.update_pull(repo, open_pr["number"], {"title": TITLE, "body": body})
        return outcome("updated", open_pr["number"], len(plan.changes))
    try:
        client.create_ref(repo, BRANCH, commit)
    except GitHubError as exc:
        if exc.status != 422:  # the branch of an earlier, closed pull request: moved, not created
            raise
        client.update_ref(repo, BRANCH, commit, force=True)
    pr = client.create_pull(repo, title=TITLE, head=f"{owner}:{BRANCH}", base=default, body=body)
    return outcome("opened", pr["number"], len(plan.changes))


# -- when it runs -----------------------------------------------------------------------------------
def run(github, store_url: str, installation_id: int, repo: str, *, now: datetime | None = None) -> Outcome:
    """One refresh with the store's durations of `repo`, recorded (the schedule reads the record)."""
    from datetime import timezone

    from bot.durations import export_records
    from bot.store import calibration as runs

    now = now or datetime.now(timezone.utc)
    client = github.for_installation(installation_id)
    outcome = refresh(client, repo, lambda: export_records(store_url, repository=repo), now=now)
    runs.record(store_url, repo, outcome.action, outcome.number, now, outcome.every_days)
    if outcome.action == "no-permission":
        log.warning("calibration pull request needs contents: write", repository=repo)
    else:
        log.info("calibration pull request", repository=repo, action=outcome.action, number=outcome.number)
    return outcome


def sweep(github, store_url: str, *, now: datetime | None = None) -> list[tuple[str, Outcome]]:
    """The worker's periodic pass: every installed repository whose last refresh is as old as its
    `calibration.pull_request_every_days` (read from its default branch at that refresh; 7 days
    before the first). Only repositories with stored durations are visited (nothing else has
    anything to calibrate); one without `calibration.pull_requests` costs one read of its
    configuration per interval and nothing else."""
    from datetime import timezone

    from bot.store import calibration as runs
    from bot.store import service as store
    from bot.store.locks import Busy, claim

    from bot.store.measurements import repositories

    now = now or datetime.now(timezone.utc)
    measured = set(repositories(store_url))  # no stored durations: nothing to calibrate, no GitHub call
    done = []
    for inst, repos in store.installations(store_url):
        for repo in runs.due(store_url, [r for r in repos if r in measured], now):
            try:
                with claim(store_url, f"calibration:{repo}", wait_s=0):  # one worker per repository
                    if repo not in runs.due(store_url, [repo], now):
                        continue  # another worker just did it
                    done.append((repo, run(github, store_url, inst.id, repo, now=now)))
            except Busy:
                continue
            except Exception as exc:  # one repository's failure must not stop the others
                log.warning("calibration pull request failed", repository=repo, error=str(exc)[:200])
                runs.record(store_url, repo, "error", None, now)
    return done
