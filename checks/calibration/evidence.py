"""Evidence that a ROCm registration a pull request enables runs: one state per registration.

A registration the PR adds or changes (enabled, of the ROCm family) gets exactly one of:

- `passed-default-branch`: the newest passing run of the file on the suite's hardware on the
  default branch (merged code, `origin_of` is `merged`), with its date, elapsed time and run;
- `passed-at-head`: an on-demand run the App dispatched for this PR's exact head SHA passed it;
- `failed`: the newest failing or timed-out run (at this head, else on the default branch when it
  is no older than the newest pass): a failure says more than an older pass;
- `not-verified`: no such run. A run of an earlier head of this PR is shown beside it, not counted.

The suite's hardware is the one the calibration rules judge it on (`DurationsIndex.for_reg`,
through `hardware_for_suite`): a run on any other hardware is no evidence. Pure: the newest runs
arrive on the durations rows (`newest_runs` below builds them from measurement records, for the
store and for a `durations export` file alike) and the head's runs as plain data from the App's
store (bot/store/evidence.py); nothing here reads a file, the store or the network.

What a PR writes never becomes evidence: only the default branch's runs of the configured events
(never a fork's, another branch's, a pull request head's or an on-demand run's) and the on-demand
runs the App itself dispatched and recorded for this head count.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from checks.model import Backend, Change, Registration

PASSED_DEFAULT = "passed-default-branch"
PASSED_HEAD = "passed-at-head"
FAILED = "failed"
NOT_VERIFIED = "not-verified"
VERIFIED = (PASSED_DEFAULT, PASSED_HEAD)
FAILURES = ("FAIL", "TIMEOUT")
DEFAULT_BRANCH = "main"  # the default branch when nothing says (`calibration.branch` names another)


def needs_evidence(reg: Registration) -> bool:
    """A ROCm-family registration the PR adds or changes and leaves enabled."""
    return (reg.backend.is_rocm_family and reg.disabled is None and not reg.implicit
            and reg.change in (Change.ADDED, Change.CHANGED))


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        value = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    return str(value)


def run_of(record: Mapping[str, Any], run: str | None = None) -> dict:
    """One run as evidence carries it (plain data)."""
    from checks.calibration.policy import run_url

    return {"at": _iso(record.get("measured_at")), "outcome": str(record.get("outcome") or "").upper(),
            "elapsed": record.get("elapsed_s"), "est_time": record.get("est_time"),
            "run": run or run_url(record), "head_sha": record.get("head_sha")}


# -- the default branch's newest runs, from measurement records ------------------------------------
def newest_runs(records: Iterable[Mapping[str, Any]], params: Any, *, default_branch: str | None = None,
                repository: str | None = None) -> dict[tuple[str, str, str], dict]:
    """(file, backend family, hardware model) -> {"pass": newest passing run, "failure": newest
    failing or timed-out run} of merged code on each calibration hardware.

    `default_branch`: the repository's (`calibration.branch` wins; neither: `main`).

    Merged code is `origin_of`'s, always: `calibration.include_unmerged` lets unmerged runs into
    the est_time windows, never into evidence."""
    from checks.calibration.policy import DEFAULT_EVENTS, MERGED, _seconds, _time, calibration_hardware, origin_of
    from checks.target.hardware import same_hardware_key

    models = {same_hardware_key(m): m for m in calibration_hardware(params)}
    events = tuple(getattr(params, "events", DEFAULT_EVENTS))
    # evidence is never "any branch": a branch unknown (a durations file) is `main`, unless configured
    branch = getattr(params, "branch", None) or default_branch or DEFAULT_BRANCH
    out: dict[tuple[str, str, str], dict] = {}
    for record in records:
        if repository is not None and record.get("repository") not in (None, repository):
            continue
        model = models.get(same_hardware_key(record.get("hardware")))
        outcome = str(record.get("outcome") or "").upper()
        if model is None or outcome not in ("PASS", *FAILURES) or not record.get("measured_at"):
            continue
        if outcome == "PASS" and _seconds(record.get("elapsed_s")) is None:
            continue
        if origin_of(record, events, branch) != MERGED:
            continue
        try:
            family = Backend(str(record.get("backend") or "rocm").lower()).family.value
        except ValueError:
            continue
        slot = out.setdefault((str(record["file"]), family, model), {})
        kind = "pass" if outcome == "PASS" else "failure"
        at = _time(record["measured_at"])
        if kind not in slot or at > _time(slot[kind]["at"]):
            slot[kind] = run_of(record)
    return out


def attach(rows: list[dict], newest: Mapping[tuple[str, str, str], dict]) -> list[dict]:
    """The durations rows with each key's newest runs on it (`newest_pass`, `newest_failure`); a
    key with runs but no window (only failures) gets a row of no passing runs."""
    from checks.target.hardware import same_hardware_key

    by_key = {(r["file"], str(r.get("backend") or "rocm"), same_hardware_key(r.get("hardware"))): r for r in rows}
    for (file, family, model), runs in sorted(newest.items()):
        row = by_key.get((file, family, same_hardware_key(model)))
        if row is None:
            row = {"file": file, "backend": family, "hardware": model, "n": 0, "median": None, "p90": None, "max": None,
                   "since": None, "values": [], "timeouts": 0}
            rows.append(row)
        row["newest_pass"] = runs.get("pass")
        row["newest_failure"] = runs.get("failure")
    return rows


def wanted(durations, head, config) -> bool:
    """Whether a check judges evidence (the summary's section, REG022): with stored runs, with
    on-demand runs of the pull request, or when the configuration requires verification."""
    return durations is not None or bool(getattr(head, "runs", ())) or config.verification == "required"


def without_evidence(rows: list[dict]) -> list[dict]:
    """The rows with no run on them as evidence (a source the pull request wrote)."""
    return [{k: v for k, v in r.items() if k not in ("newest_pass", "newest_failure")} for r in rows]


# -- one registration's state -----------------------------------------------------------------------
@dataclass(frozen=True)
class HeadRuns:
    """The on-demand runs the App dispatched for this pull request: `head_sha` is its head now;
    a run of another head is an earlier push's (shown, never counted)."""

    head_sha: str | None
    runs: tuple[dict, ...] = ()  # {file, backend, hardware, outcome, elapsed, est_time, at, run, head_sha}

    @classmethod
    def of(cls, data: Mapping[str, Any] | None) -> "HeadRuns":
        data = data or {}
        return cls(data.get("head_sha"), tuple(data.get("runs") or ()))


@dataclass(frozen=True)
class Evidence:
    file: str
    line: int
    backend: str
    suite: str | None
    est_time: float | None
    change: str
    hardware: str
    state: str
    run: dict | None = None  # the run the state rests on
    earlier: dict | None = None  # not-verified: a run of an earlier head of this PR, shown as such
    extra: dict = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        return self.state in VERIFIED

    def as_json(self) -> dict:
        return {"file": self.file, "line": self.line, "backend": self.backend, "suite": self.suite,
                "est_time": self.est_time, "change": self.change, "hardware": self.hardware, "state": self.state,
                "verified": self.verified, "run": self.run, "earlier_head_run": self.earlier}


def _newer(a: dict | None, b: dict | None) -> bool:
    """a is at least as new as b (a run without a date is never newer)."""
    from checks.calibration.policy import _time

    if a is None or not a.get("at"):
        return False
    return b is None or not b.get("at") or _time(a["at"]) >= _time(b["at"])


def _newest(runs: list[dict]) -> dict | None:
    best = None
    for run in runs:
        if best is None or _newer(run, best):
            best = run
    return best


def judge(reg: Registration, durations, head: HeadRuns, params: Any) -> Evidence:
    """The registration's one state (the module docstring orders them)."""
    from checks.calibration.policy import hardware_for_suite
    from checks.target.hardware import same_hardware_key

    hardware = hardware_for_suite(reg.suite, params)  # the suite's hardware, as the calibration rules read it
    key = same_hardware_key(hardware)
    family = reg.backend.family.value

    def made(state: str, run: dict | None = None, earlier: dict | None = None) -> Evidence:
        return Evidence(reg.file, reg.span.line, reg.backend.value, reg.suite, reg.est_time,
                        reg.change.value if reg.change else "", hardware, state, run, earlier)

    mine = [r for r in head.runs if r.get("file") == reg.file and same_hardware_key(r.get("hardware")) == key
            and _family(r.get("backend")) == family]
    current = [r for r in mine if head.head_sha and r.get("head_sha") == head.head_sha]
    if current:
        failed = _newest([r for r in current if r.get("outcome") in FAILURES])
        if failed is not None:
            return made(FAILED, failed)
        return made(PASSED_HEAD, _newest(current))
    d = durations.for_reg(reg) if durations is not None else None
    passed = getattr(d, "newest_pass", None)
    failure = getattr(d, "newest_failure", None)
    if failure is not None and _newer(failure, passed):
        return made(FAILED, failure)
    if passed is not None:
        return made(PASSED_DEFAULT, passed)
    return made(NOT_VERIFIED, None, _newest([r for r in mine if r.get("head_sha") != head.head_sha]))


def _family(backend: Any) -> str | None:
    try:
        return Backend(str(backend or "rocm").lower()).family.value
    except ValueError:
        return None


def collect(registrations: Iterable[Registration], durations, head: HeadRuns, params: Any) -> list[Evidence]:
    """Each registration that needs evidence, judged, in file and line order."""
    regs = sorted((r for r in registrations if needs_evidence(r)), key=lambda r: (r.file, r.span.line, r.span.column))
    return [judge(r, durations, head, params) for r in regs]
