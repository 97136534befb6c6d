"""One analysis job under a wall-clock and a memory limit: the engine runs in a child process.

Every analysis of PR content goes through here: the PR check (checks.engine.check_tree, the
default engine) and a /run-rocm command's selection (bot.ondemand.selection.analyse).

checks/limits.py bounds what the engine reads and builds, but Python alone cannot stop a
computation that takes too long, or cap its memory, from inside the same process. So the App runs
`check_tree` in a child process with RLIMIT_AS (memory) and RLIMIT_CPU (a backstop should the
worker die) set in the child before it runs the engine, and stops it when its time is up.

The child is a fork of the analysis server (bot/analysis/server.py): an interpreter exec'd
once per worker process with a scrubbed environment, which has imported the engine and holds
nothing of the worker's (no token, no key, no socket but its own). A fork of it starts in about a
millisecond where a fresh interpreter spent a quarter of a CPU-second importing the engine.
Messages go both ways as pickles (multiprocessing.connection framing) over the job's own socket.

Design: the child reads files through the worker. It gets the two listings (head and base paths)
and a Tree whose `read`/`prefetch` ask the worker, which answers from the real Tree
(bot/analysis/sources.py GitHubTree: GitHub calls, retries, the blob cache). The engine announces
the files it will read (`prefetch`); the worker reads those in bulk and sends their bytes back in
one message, so an announced read costs no round trip; an unannounced one asks for its file.
Why this over the two alternatives:
- a snapshot of every byte the engine might need would duplicate the engine's choice of files
  (discovery, diff mode, suite totals) in the worker, and read files the engine would not;
- reading the blob cache directory from the child needs every blob on disk first (the cache is
  optional and memory-first) and the same duplicated choice of files.
Proxying keeps exactly the in-process engine's reads, with GitHub I/O, tokens and caches in the
worker only. The clock counts the child's time only: the time the worker spends fetching blobs
for it is not charged to the analysis (GitHub's slowness has its own retry handling). The child
writes the path it is reading into a page it shares with the worker, so a limit names the file.

The result is the engine's Report, or a LimitExceeded naming the limit, its value and the file
being read when it was hit. bot/worker/handlers/pull_requests.py turns that into a `neutral` check run.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import Mapping

from bot.analysis.child import EXIT_OUT_OF_MEMORY
from checks.limits import Limits

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MB = 1024
TIMEOUT_ENV = "CI_REGISTRAR_ANALYSIS_TIMEOUT_S"
MEMORY_ENV = "CI_REGISTRAR_ANALYSIS_MEMORY_MB"
ENGINE = "checks.engine:check_tree"

_FROM_TREE = object()


class AnalysisError(Exception):
    """The engine raised in the child (a bug, not a limit): the job's ordinary failure handling applies."""


@dataclass(frozen=True)
class LimitExceeded:
    """The analysis was stopped: `limit` ("timeout_s" or "memory_bytes") reached at `value`."""

    limit: str
    value: float | int
    detail: str
    file: str | None = None

    @property
    def env_var(self) -> str:
        return TIMEOUT_ENV if self.limit == "timeout_s" else MEMORY_ENV

    def describe_value(self) -> str:
        if self.limit == "timeout_s":
            return f"{self.value:g} s"
        return f"{self.value / (1024 * 1024):g} MiB"

    def check_run(self) -> tuple[str, dict, list[dict]]:
        """(conclusion, output, annotations) for the check run: neutral, never a pass."""
        from checks.reporting.render import SUMMARY_LIMIT, md_code, md_text

        what = "time" if self.limit == "timeout_s" else "memory"
        title = f"Not checked: the analysis reached its {what} limit ({self.limit} = {self.describe_value()})"
        where = f" while reading {md_code(self.file)}" if self.file else ""
        summary = (
            f"CI Registrar stopped analysing this commit{where}: {md_text(self.detail)}.\n\n"
            f"The limit is `{self.limit}` = {self.describe_value()} (set by `{self.env_var}`). "
            "No registration was checked, so this check is **neutral**, not a pass: the inputs this "
            "pull request adds (test files, workflows, the suite inventory) are larger or more "
            "expanded than a review needs. Make them smaller, or raise the limit for this deployment."
        )
        return "neutral", {"title": title[:255], "summary": summary[:SUMMARY_LIMIT]}, []


def budget_from_env(environ: Mapping[str, str]) -> tuple[float, int]:
    """(timeout in seconds, memory in bytes) from CI_REGISTRAR_ANALYSIS_TIMEOUT_S / _MEMORY_MB."""
    timeout, memory = DEFAULT_TIMEOUT_S, DEFAULT_MEMORY_MB
    raw = environ.get(TIMEOUT_ENV)
    if raw not in (None, ""):
        try:
            timeout = float(raw)
        except ValueError:
            raise ValueError(f"{TIMEOUT_ENV}={raw!r}: expected a number of seconds") from None
        if not timeout > 0:
            raise ValueError(f"{TIMEOUT_ENV}={raw!r}: must be more than 0")
    raw = environ.get(MEMORY_ENV)
    if raw not in (None, ""):
        if not raw.strip().isdigit() or int(raw) < 64:
            raise ValueError(f"{MEMORY_ENV}={raw!r}: expected a whole number of MiB, at least 64")
        memory = int(raw)
    return timeout, memory * 1024 * 1024


# -- the parent -----------------------------------------------------------------------------------
def run_check_bounded(
    head,
    base=None,
    changed=None,
    *,
    config_text=_FROM_TREE,
    limits: Limits | None = None,
    timeout_s: float | None = None,
    memory_bytes: int | None = None,
    engine: str = ENGINE,
    scan_cache=None,
    log=None,
    consumers_from: dict | None = None,
    arguments: dict | None = None,
):
    """checks.engine.check_tree(head, base, changed, config_text=..., limits=..., consumers_from=...) in a child process.

    Returns the Report, or LimitExceeded when the child runs longer than `timeout_s` (time spent
    computing, not waiting for the parent's reads) or past `memory_bytes`. Defaults come from the
    environment (budget_from_env, Limits.from_env). Raises AnalysisError when the engine raises.
    `engine` ("module:function") exists for tests.
    `scan_cache`: the engine's scan-cache hook in this process (the App's registration index); the
    child reaches it over the pipe. It is a cache: an error in it is logged (`log`) and treated
    as a miss, never as the check's failure.
    `consumers_from`: the external consumers' workflows the parent read
    (bot.analysis.sources.external_consumers), passed on as they are.
    `arguments`: more keyword arguments for `engine` (pickled: plain data), e.g. the on-demand
    selection's trusted configuration and command (bot/ondemand/selection.py).
    """
    env_timeout, env_memory = budget_from_env(os.environ)
    timeout_s = env_timeout if timeout_s is None else timeout_s
    memory_bytes = env_memory if memory_bytes is None else memory_bytes
    limits = limits or Limits.from_env(os.environ)
    if config_text is _FROM_TREE:
        from checks.config.schema import CONFIG_PATH

        config_text = head.read(CONFIG_PATH)
    if consumers_from:  # enough of an oversized file for the engine to see it is over the cap
        consumers_from = {k: v[: limits.file_bytes + 1] if isinstance(v, bytes) else v for k, v in consumers_from.items()}
    trees = {"head": head, "base": base}
    # The head is listed up front (discovery needs every path); a base only where it has a listing
    # already (bot.analysis.sources reads an unlisted base at the paths the engine asks for).
    head_paths = list(head.paths())
    head_blob_sha = getattr(head, "blob_sha", None)
    head_shas = {p: sha for p in head_paths if (sha := head_blob_sha(p))} if scan_cache is not None and head_blob_sha else None
    listings = {"head": head_paths,
                "base": list(base.paths()) if base is not None and getattr(base, "listed", True) else None}
    from bot.analysis import slots as analysis_slots

    # One of the analysis slots shared between installations (bot/analysis/slots.py): taken before
    # the child starts, paused (SIGSTOP) and taken again when the job must yield, freed at the end.
    with analysis_slots.held(_installation(), log=log) as slot:
        started, timing = time.monotonic(), {}
        try:
            return _run_child(slot, engine, listings, base, head_shas, changed, config_text, limits, memory_bytes,
                              timeout_s, consumers_from, arguments, trees, scan_cache, log, timing)
        finally:
            if log is not None:
                # Where an analysis' time went (issue 38: a flood's wait is read from these lines).
                log.info("analysis finished", slot_wait_s=round(slot.waited_s, 3) if slot else 0.0,
                         paused_s=round(slot.paused_s, 3) if slot else 0.0, yields=slot.yields if slot else 0,
                         run_s=round(time.monotonic() - started - (slot.paused_s if slot else 0.0), 3),
                         child_cpu_s=round(timing.get("child_cpu_s", 0.0), 3))


def _installation():
    from bot.infra.current_job import CURRENT_JOB

    job = CURRENT_JOB.get()
    return job.installation_id if job is not None else None


YIELD_CHECK_S = 0.1  # how often a running analysis asks whether it must give its slot up


def _run_child(slot, engine, listings, base, head_shas, changed, config_text, limits, memory_bytes, timeout_s,
               consumers_from, arguments, trees, scan_cache, log, timing):
    from bot.analysis import server as analysis_server

    job = analysis_server.server().submit()  # a fork of the pre-imported server, waiting for its job
    computing = 0.0
    conn = job.conn
    try:
        try:
            conn.send({"engine": engine, "listings": listings, "has_base": base is not None,
                       "scan_cache": scan_cache is not None, "head_shas": head_shas,
                       "changed": changed, "config_text": config_text,
                       "limits": limits, "memory_bytes": memory_bytes, "cpu_s": int(timeout_s) + 10,
                       "consumers_from": consumers_from, "arguments": arguments})
        except (BrokenPipeError, OSError):
            pass  # the child is gone already: its exit status says why, below
        next_check = time.monotonic() + YIELD_CHECK_S
        while True:
            if slot is not None and time.monotonic() >= next_check:
                if slot.must_yield():
                    # Another installation has waited its turn: this analysis stops where it is
                    # (its memory kept, its clock stopped) until the slot comes back to it.
                    job.signal(signal.SIGSTOP)
                    try:
                        slot.yield_and_wait()
                    finally:
                        job.signal(signal.SIGCONT)
                next_check = time.monotonic() + YIELD_CHECK_S
            started = time.monotonic()
            wait = max(timeout_s - computing, 0)
            ready = conn.poll(wait if slot is None else min(wait, YIELD_CHECK_S))
            computing += time.monotonic() - started
            if not ready:
                if computing < timeout_s:
                    continue  # a tick to ask the scheduler, not the limit
                return LimitExceeded("timeout_s", timeout_s, f"it ran longer than {timeout_s:g} s", job.last_file())
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return _died(job.wait(5), timeout_s, memory_bytes, job.last_file())
            kind = message[0]
            if kind == "read":
                _, name, path = message
                try:
                    conn.send(_read_one(trees[name], path, limits))
                except (BrokenPipeError, OSError):
                    pass  # the child died meanwhile: the next recv says how
            elif kind == "prefetch":
                conn.send(_bulk(trees, message[1], limits))
            elif kind == "paths":
                conn.send(list(trees[message[1]].paths()))
            elif kind == "index_get":
                # as the store keeps them (JSON text) where the cache can: the child decodes them
                conn.send(_index_call(getattr(scan_cache, "get_texts", None) or scan_cache.get_many, message[1], {}, log))
            elif kind == "index_put":
                conn.send(_index_call(scan_cache.put_many, message[1], None, log))
            elif kind == "report":
                return message[1]
            elif kind == "memory":
                return LimitExceeded("memory_bytes", memory_bytes, f"it needed more than {memory_bytes / (1024 * 1024):g} MiB", job.last_file())
            else:
                raise AnalysisError(f"the analysis raised:\n{message[1]}")
    finally:
        job.close()
        _count_cpu(job.cpu_s)
        timing["child_cpu_s"] = job.cpu_s


def _read_one(tree, path: str, limits: Limits) -> bytes | None:
    """A file the engine did not announce: one round trip of its own."""
    return _capped(tree.read(path), limits)


def _capped(data: bytes | None, limits: Limits) -> bytes | None:
    if data is not None and len(data) > limits.file_bytes:
        return data[: limits.file_bytes + 1]  # enough for the engine to see it is over the cap
    return data


def _bulk(trees, wanted, limits: Limits) -> dict[str, dict[str, bytes | None]]:
    """The announced files of each tree, read in one go (checks.scanning.tree.prefetch), sent as one message."""
    from checks.scanning.tree import prefetch

    prefetch([(trees[name], paths) for name, paths in wanted])
    return {name: {path: _capped(trees[name].read(path), limits) for path in paths} for name, paths in wanted}


_CPU_LOCK = threading.Lock()
_CHILDREN_CPU_S = 0.0


def _count_cpu(seconds: float) -> None:
    global _CHILDREN_CPU_S
    with _CPU_LOCK:
        _CHILDREN_CPU_S += seconds


def children_cpu_s() -> float:
    """The CPU time (user + system) every analysis child of this process has used: they are the
    server's children, not this process's, so RUSAGE_CHILDREN does not count them."""
    with _CPU_LOCK:
        return _CHILDREN_CPU_S


def _index_call(fn, argument, fallback, log):
    try:
        return fn(argument)
    except Exception as exc:  # noqa: BLE001 - a cache: the check goes on without it
        if log is not None:
            log.warning("registration index unavailable", error=type(exc).__name__)
        return fallback


def _died(exitcode: int | None, timeout_s: float, memory_bytes: int, last_file: str | None):
    if exitcode == EXIT_OUT_OF_MEMORY:
        return LimitExceeded("memory_bytes", memory_bytes, f"it needed more than {memory_bytes / (1024 * 1024):g} MiB", last_file)
    if exitcode is not None and exitcode < 0 and -exitcode == signal.SIGXCPU:
        return LimitExceeded("timeout_s", timeout_s, "it used more CPU time than its limit allows", last_file)
    if exitcode is not None and exitcode < 0 and -exitcode in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS):
        # With RLIMIT_AS set, allocation failures outside Python's reach end the process this way.
        return LimitExceeded("memory_bytes", memory_bytes, f"the analysis process was ended by signal {-exitcode}, most likely past its {memory_bytes / (1024 * 1024):g} MiB memory limit", last_file)
    raise AnalysisError(f"the analysis process exited with code {exitcode}")


