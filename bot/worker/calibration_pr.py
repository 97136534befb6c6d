"""The calibration pull request: one per repository, on a fixed branch, kept in step with the store.

What `ci-registrar calibrate --write` would change on the default branch is committed by the App
through the Git Data API (a blob per edited file, one tree on the default branch's tree, one
commit, the branch ref) and shown in one pull request:
- none open and something to change: the branch is (re)pointed and the pull request opened;
- open, and the values changed: the branch is fast-forwarded to a new commit, the default branch
  merged into the App's last commit with the new values (GitHub's "update branch"), and the body
  rewritten, in place;
- open, and nothing left to change: closed, with a comment saying why;
- closed by someone else with these very values: left closed, until the values change again.

The branch is the App's only while it is: only a pull request the App's bot opened is ever
updated, and only while every commit on its branch (beyond the default branch) was made by the App
through the API (its bot as author and committer, with GitHub's signature). Once anyone else has
pushed, the App holds: one comment with the values it would write, nothing else, until the pull
request is closed or the branch is back on an App commit. The App never force-pushes: its ref update
is a fast-forward from the commit it read, so a push that lands between its read and its write is
refused by GitHub (422 "Update is not a fast forward") and the App holds as above. A branch of that name holding anyone
else's commits, or with anyone else's pull request open from it, is never moved.

The body carries a fingerprint of the values it proposes (an HTML comment), so none of this needs
state of its own. The policy and the edits are checks/ (checks/calibration/policy.py,
checks/fixing/calibration_edits.py); this module only reads and writes GitHub.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime

from typing import TYPE_CHECKING

from bot.github.retry import GitHubError
from bot.infra.logging import get_logger
from checks.config.schema import CONFIG_PATH, load_config
from checks.model import code
from checks.wording import REFUSED, amount, plural, usable, visible

if TYPE_CHECKING:  # the policy, the edits (libcst) and the shards load only when a refresh runs
    from checks.calibration.policy import Decision, Plan

log = get_logger("ci_registrar.calibration")

BRANCH = "ci-registrar/calibrate-est-time"
TITLE = "Calibrate est_time from stored MI355X durations"
_MARK = re.compile(r"<!-- ci-registrar calibration: ([0-9a-f]{16}|none) -->")
_HELD = re.compile(r"<!-- ci-registrar calibration held: [0-9a-f]{40} [0-9a-f]{16} -->")
CLOSED_NOTICE = ("Nothing is left to calibrate: every est_time this pull request changed now fits the stored "
                 "durations (or was changed on the default branch). Closing it; a new one opens when values drift.")
NO_PERMISSION = ("The calibration pull request needs the App's `contents: write` permission (to commit the new "
                 "est_time values on the branch `{branch}`), which this installation has not granted. Nothing was "
                 "changed. Run `ci-registrar calibrate --durations --write` on a checkout instead (docs/calibration.md).")
BRANCH_TAKEN = ("The branch `{branch}` holds work that is not the App's ({who}), so the App neither moves it nor "
                "opens its pull request from it. Delete the branch (or point it back at a commit of the App's) and the "
                "next refresh opens the calibration pull request.")


@dataclass
class Outcome:
    action: str  # opened | updated | unchanged | closed | kept-closed | nothing | no-permission | held | branch-taken
    number: int | None = None
    changes: int = 0
    message: str = ""
    every_days: float = 7  # the repository's calibration.pull_request_every_days
    verdicts: str | None = None  # what this refresh decided per file (verdicts()), None: decided nothing


def _outcome_with(every_days: float, verdicts_json: str | None = None):
    def make(action: str, number: int | None = None, changes: int = 0, message: str = "") -> Outcome:
        return Outcome(action, number, changes, message, every_days, verdicts_json)
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
    if not usable(v):
        return REFUSED
    return f"{v:g}" if float(v).is_integer() else f"{v:.0f}"


def render_body(plan: "Plan", windows, uses, registrations, changes_print: str, params) -> str:
    """The table per suite (file, old, new, n, p90, max, why) and each suite's totals before and
    after, against its consumers' timeouts and shard counts, the view REG030 takes."""
    from checks.calibration.policy import window_for
    from checks.calibration.shards import Item, heaviest, partition

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
        lines += [f"### {code(suite)}", "", "| file | old | new | n | p90 | max | why |", "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
        for d in by_suite[suite]:
            why = d.reason
            if getattr(d, "one_run", False):  # one slow pass sets the value: say so, with the run to look at
                why += " (driven by a single run" + (f": [{d.run.rsplit('/', 1)[-1]}]({d.run})" if d.run else "") + ")"
            lines.append(f"| {code(d.registration.file)} | {_fmt(d.old)} | {_fmt(d.new)} | {d.n} | {_fmt(d.p90)} | {_fmt(d.max)} | {why} |")
        regs = [r for r in registrations if r.suite == suite and r.disabled is None and r.est_time is not None]
        before = sum(r.est_time for r in regs)
        after = sum(new_of.get(r.file, r.est_time) for r in regs)
        lines += ["", f"Suite total est_time: {amount(before, 'g', 's')} -> {amount(after, 'g', 's')} over {plural(len(regs), 'file')}."]
        for use in [u for u in uses if u.suite == suite and u.shards >= 1]:
            def predicted(est_of):
                items = []
                for r in regs:
                    w = window_for(windows, r, params)
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
    from bot.analysis.sources import GitHubTree
    from checks.calibration.policy import Bounds, Plan, build_suite_windows, decide_all, stats_rows
    from checks.fixing.calibration_edits import plan_edits
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
    from checks.target.timeout_model import with_runner_timeout

    params = with_runner_timeout(params, tree.read, config.paths.register_module)  # the default branch's runner
    windows = build_suite_windows(records, params, now=now, repository=repo, default_branch=default)
    report = check_tree(tree, config_text=tree.read(CONFIG_PATH), durations=stats_rows(windows), fixes=False)
    ctx, _paths, _findings = build_context(tree, config)
    plan = Plan(decide_all(report.registrations, windows, params, Bounds.of(ctx.contract)))
    changes_print = fingerprint(plan.changes)
    outcome = _outcome_with(params.pull_request_every_days, verdicts(plan, Bounds.of(ctx.contract)))

    bot = client.github.bot_login()
    pulls = client.pulls_from(repo, f"{owner}:{BRANCH}")
    mine = [p for p in pulls if _by_app(p, bot)]  # a pull request someone else opened is never ours
    strangers_open = [p for p in pulls if not _by_app(p, bot) and p["state"] == "open"]
    latest = mine[0] if mine else None
    open_pr = latest if latest and latest["state"] == "open" else None

    ahead = False  # the branch holds commits beyond the default branch (the App's, checked)
    if open_pr is not None:
        foreign, ahead = _foreign_commits(client, repo, head, open_pr["head"]["sha"], bot)
        if foreign:  # someone else pushed to it: theirs now, until closed or back on an App commit
            return _hold(client, repo, open_pr, plan, foreign, bot, outcome)
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

    branch_head = open_pr["head"]["sha"] if open_pr is not None else _branch_head(client, repo)
    if open_pr is None and branch_head is not None:
        # The branch outlived the App's pull requests, or was made by someone else: the App moves
        # it only when nothing on it (beyond the default branch) is anyone else's work, and no one
        # else's pull request is open from it.
        foreign, ahead = _foreign_commits(client, repo, head, branch_head, bot)
        if foreign or strangers_open:
            return outcome("branch-taken", None, len(plan.changes), BRANCH_TAKEN.format(
                branch=BRANCH, who=_who(foreign) if foreign else f"pull request #{strangers_open[0]['number']}"))

    edits = plan_edits(plan.changes, lambda path: tree.read(path).decode("utf-8"))
    listing = client.tree(repo, head)
    try:
        entries = [{"path": e.path, "mode": _mode(client, repo, listing, e.path), "type": "blob",
                    "sha": client.create_blob(repo, e.after.encode("utf-8"))} for e in edits]
    except GitHubError as exc:
        if exc.status in (403, 404):
            return outcome("no-permission", open_pr["number"] if open_pr else None, len(plan.changes),
                           NO_PERMISSION.format(branch=BRANCH))
        raise
    new_tree = client.create_tree(repo, listing["sha"], entries)
    message = f"Calibrate {plural(len(plan.changes), 'est_time value')} from stored {params.hardware} durations\n\n" + "\n".join(
        f"{d.registration.file}:{d.registration.anchor('est_time').line}: {_fmt(d.old)} -> {_fmt(d.new)} ({d.reason})"
        for d in plan.changes)
    # No author, no committer: GitHub names the App's bot as both and signs the commit, which is
    # how the next refresh tells the App's commits from anyone else's.
    # The new commit descends from the branch head the App read (when that holds commits of its
    # own, as a merge of the default branch into it: the tree is the default branch's with the new
    # values, so the pull request shows only them), so that its ref update is a fast-forward.
    parents = [branch_head, head] if branch_head is not None and ahead else [head]
    commit = client.create_commit(repo, message, new_tree, parents)
    body = render_body(plan, windows, ctx.uses, report.registrations, changes_print, params)
    if branch_head is None:
        client.create_ref(repo, BRANCH, commit)
    else:
        try:
            # never force: GitHub refuses the update unless the branch still points at
            # `branch_head` or one of the new commit's ancestors (its compare-and-set)
            client.update_ref(repo, BRANCH, commit, force=False)
        except GitHubError as exc:
            if exc.status != 422:
                raise
            return _pushed_meanwhile(client, repo, head, open_pr, plan, bot, outcome, exc)
    if open_pr is not None:
        client.update_pull(repo, open_pr["number"], {"title": TITLE, "body": body})
        return outcome("updated", open_pr["number"], len(plan.changes))
    pr = client.create_pull(repo, title=TITLE, head=f"{owner}:{BRANCH}", base=default, body=body)
    return outcome("opened", pr["number"], len(plan.changes))


# -- whose branch it is -----------------------------------------------------------------------------
def _by_app(pull: dict, bot: str) -> bool:
    user = pull.get("user") or {}
    return user.get("login") == bot and user.get("type") == "Bot"


def is_app_commit(commit: dict, bot: str) -> bool:
    """Made by the App through the API: authored and committed by its bot account AND carrying
    GitHub's verified signature. GitHub links a commit to an account by email alone, so a pushed
    commit can name the bot; only GitHub signs the commits its API makes for an App ("bot
    signatures", never with a custom author or committer)."""
    return ((commit.get("author") or {}).get("login") == bot and (commit.get("committer") or {}).get("login") == bot
            and bool(((commit.get("commit") or {}).get("verification") or {}).get("verified")))


def _foreign_commits(client, repo: str, base: str, head_sha: str, bot: str) -> tuple[list[dict], bool]:
    """The commits on the branch (beyond `base`, the default branch's head) that are not the
    App's, all of them when GitHub cannot list them all (over 250: someone's history, certainly
    not the App's); and whether the branch has any commit beyond `base` at all."""
    compared = client.compare(repo, base, head_sha)
    commits = compared.get("commits") or []
    if compared.get("total_commits", len(commits)) > len(commits):
        return commits or [{"sha": head_sha}], True
    return [c for c in commits if not is_app_commit(c, bot)], bool(commits)


def _pushed_meanwhile(client, repo: str, head: str, open_pr: dict | None, plan: "Plan", bot: str, outcome,
                      refused: GitHubError) -> Outcome:
    """GitHub refused the fast-forward: the branch moved after the App read it. Someone else's
    commit: hold (the one comment) or, with no pull request of the App's open, leave the branch
    to them. The App's own (another worker's refresh): nothing to do now, the next refresh reads it."""
    now_head = _branch_head(client, repo)
    if now_head is None:  # deleted in between: nothing to overwrite, the next refresh starts afresh
        return outcome("nothing", open_pr["number"] if open_pr else None, len(plan.changes), "the branch was deleted meanwhile")
    foreign, _ = _foreign_commits(client, repo, head, now_head, bot)
    if not foreign:
        log.info("calibration branch moved by the App meanwhile", repository=repo, status=refused.status)
        return outcome("unchanged", open_pr["number"] if open_pr else None, len(plan.changes))
    if open_pr is not None:
        return _hold(client, repo, {**open_pr, "head": {**open_pr["head"], "sha": now_head}}, plan, foreign, bot, outcome)
    return outcome("branch-taken", None, len(plan.changes), BRANCH_TAKEN.format(branch=BRANCH, who=_who(foreign)))


def _branch_head(client, repo: str) -> str | None:
    try:
        return client.branch_head(repo, BRANCH)
    except GitHubError as exc:
        if exc.status == 404:
            return None
        raise


def _who(commits: list[dict]) -> str:
    """`abc1234` by alice, ...: the commits as a maintainer finds them."""
    def name(c):
        return ((c.get("author") or {}).get("login") or ((c.get("commit") or {}).get("author") or {}).get("name")
                or "an unknown author")
    return ", ".join(f"`{c['sha'][:7]}` by {visible(name(c))}" for c in commits[:5]) + (
        f" and {len(commits) - 5} more" if len(commits) > 5 else "")


def _mode(client, repo: str, listing: dict, path: str) -> str:
    """The file's mode on the default branch, so an executable test stays executable. A listing
    GitHub cut short is walked one directory at a time instead."""
    for entry in listing["tree"]:
        if entry["path"] == path:
            return entry["mode"]
    if not listing.get("truncated"):
        raise ValueError(f"{path} is not in the default branch's tree")
    sha, parts = listing["sha"], path.split("/")
    for depth, part in enumerate(parts):
        entry = next((e for e in client.tree_level(repo, sha)["tree"] if e["path"] == part), None)
        if entry is None:
            raise ValueError(f"{path} is not in the default branch's tree")
        if depth == len(parts) - 1:
            return entry["mode"]
        sha = entry["sha"]
    raise ValueError(path)  # unreachable: an empty path is no file


def held_comment(plan: "Plan", foreign: list[dict], head_sha: str, changes_print: str) -> str:
    lines = [f"Someone other than CI Registrar pushed to `{BRANCH}` ({_who(foreign)}). The App no longer "
             "updates, retitles, closes or pushes to this pull request: that would overwrite their work. It "
             "resumes when the branch is back on a commit of the App's, or once this pull request is closed and "
             "the branch deleted (a new pull request then).", ""]
    if plan.changes:
        lines += ["The values it would write now:", "", "| file | line | old | new | why |", "| --- | ---: | ---: | ---: | --- |"]
        lines += [f"| {code(d.registration.file)} | {d.registration.anchor('est_time').line} | {_fmt(d.old)} | {_fmt(d.new)} | {d.reason} |"
                  for d in plan.changes]
    else:
        lines.append("It would write nothing now: every est_time fits the stored durations.")
    lines += ["", f"<!-- ci-registrar calibration held: {head_sha} {changes_print} -->"]
    return "\n".join(lines)


def _hold(client, repo: str, pr: dict, plan: "Plan", foreign: list[dict], bot: str, outcome) -> Outcome:
    """One comment per pull request with what the App would write; edited in place when that or
    the branch changes, never posted again on each refresh."""
    body = held_comment(plan, foreign, pr["head"]["sha"], fingerprint(plan.changes))
    earlier = next((c for c in client.issue_comments(repo, pr["number"])
                    if (c.get("user") or {}).get("login") == bot and _HELD.search(c.get("body") or "")), None)
    if earlier is None:
        client.comment(repo, pr["number"], body)
    elif earlier["body"] != body:
        client.edit_comment(repo, earlier["id"], body)
    return outcome("held", pr["number"], len(plan.changes), f"someone else pushed to {BRANCH}: {_who(foreign)}")


# -- after an ingest: did a REG020 verdict change? ------------------------------------------------
@dataclass(frozen=True)
class _Seen:
    """A registration as the last refresh saw it on the default branch: what decide() reads."""
    file: str
    backend: "object"
    est_time: float
    suite: str | None = None
    disabled: None = None
    implicit: bool = False


def verdicts(plan: "Plan", bounds) -> str:
    """Each calibrated file's REG020 verdict at this refresh (flagged: calibrate changes it), with
    what re-deciding it needs that the store does not hold: its est_time, suite and the bound."""
    seen = [[d.registration.file, d.registration.backend.family.value, d.old, d.registration.suite, d.changed]
            for d in plan.decisions if d.old is not None and d.registration.disabled is None]
    return json.dumps({"minimum": bounds.minimum, "files": sorted(seen, key=lambda row: (row[0], row[1]))},
                      sort_keys=True)


def changed_verdicts(verdicts_json: str, records, params, *, now: datetime, repository: str) -> list[str]:
    """The files whose REG020 verdict the stored durations `records` now give differs from the
    one of the last refresh (same est_time, same policy: checks.calibration.policy.decide)."""
    from checks.calibration.policy import Bounds, build_windows, decide
    from checks.model import Backend

    seen = json.loads(verdicts_json)
    windows = build_windows(records, params, now=now, repository=repository)
    bounds = Bounds(seen["minimum"])
    out = []
    for file, family, est, suite, flagged in seen["files"]:
        reg = _Seen(file, Backend(family), est, suite)
        if decide(reg, windows.get((file, reg.backend)), params, bounds).changed != flagged:
            out.append(file)
    return out


def after_ingest(store_url: str, repo: str, params, *, now: datetime | None = None) -> list[str]:
    """Called after durations were stored for `repo` (params: its default branch's `calibration:`).
    A REG020 verdict changed: the next worker pass refreshes the calibration pull request, at most
    once per `ingest_refresh_every_hours`. Returns the changed files when it asked, else []."""
    from datetime import timedelta, timezone

    from bot.durations.export import export_records
    from bot.store import calibration as runs

    if not params.pull_requests or params.ingest_refresh_every_hours <= 0:
        return []
    now = now or datetime.now(timezone.utc)
    every = timedelta(hours=params.ingest_refresh_every_hours)
    seen, asked_at = runs.last_verdicts(store_url, repo)
    if seen is None or (asked_at is not None and now - asked_at < every):
        return []  # no refresh yet (the schedule does the first), or asked within the interval
    changed = changed_verdicts(seen, export_records(store_url, repository=repo), params, now=now, repository=repo)
    if changed and runs.request(store_url, repo, seen, now, every):
        log.info("calibration refresh asked by an ingest", repository=repo, files=changed[:5])
        return changed
    return []


# -- when it runs -----------------------------------------------------------------------------------
def run(github, store_url: str, installation_id: int, repo: str, *, now: datetime | None = None) -> Outcome:
    """One refresh with the store's durations of `repo`, recorded (the schedule reads the record)."""
    from datetime import timezone

    from bot.durations.export import export_records
    from bot.store import calibration as runs

    now = now or datetime.now(timezone.utc)
    client = github.for_installation(installation_id)
    outcome = refresh(client, repo, lambda: export_records(store_url, repository=repo), now=now)
    runs.record(store_url, repo, outcome.action, outcome.number, now, outcome.every_days, outcome.verdicts)
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
