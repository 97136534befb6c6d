"""Every process a test starts ends with it, pass or fail.

Tests start `ci-registrar serve` and `worker` processes through start(): each runs in its own
process group (its gunicorn workers and analysis children with it), and is remembered here. Three
things end them:

- the test's own clean-up (a fixture's finally, stop()), which also says how it ended;
- after each test's body, every process that body started and left running (tests/conftest.py),
  so an assertion that fails before the clean-up code leaks nothing;
- at the end of the session, every process a fixture of wider scope left, and any child of this
  pytest process that is a `ci-registrar` command; those are reported as an error of the run.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.patience import PATIENCE

_started: list[subprocess.Popen] = []


def start(args, **popen_kwargs) -> subprocess.Popen:
    """subprocess.Popen(args, ...) in a new process group, remembered until the session ends."""
    popen_kwargs.setdefault("start_new_session", True)
    proc = subprocess.Popen(args, **popen_kwargs)
    _started.append(proc)
    return proc


def signal_group(proc: subprocess.Popen, signum: int) -> None:
    """`signum` to the process group of `proc` (its leader and every child still in the group)."""
    try:
        os.killpg(proc.pid, signum)
    except ProcessLookupError:
        pass


def stop(proc: subprocess.Popen, grace: float | None = None) -> int:
    """SIGTERM to its process group; SIGKILL after `grace` seconds (PATIENCE) if it is still there.
    The leftovers of the group (a child that outlived its parent) are killed either way."""
    if proc.poll() is None:
        signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(PATIENCE if grace is None else grace)
        except subprocess.TimeoutExpired:
            signal_group(proc, signal.SIGKILL)
            proc.wait(PATIENCE)
    signal_group(proc, signal.SIGKILL)
    return proc.returncode


def mark() -> int:
    return len(_started)


def stop_started_since(index: int) -> list[str]:
    """Stop every process start()ed after mark() returned `index`; the command lines of those that
    were still running."""
    left = [p for p in _started[index:] if p.poll() is None]
    for proc in left:
        stop(proc, grace=5)
    return [" ".join(map(str, proc.args)) for proc in left]


def stray_children() -> list[tuple[int, str]]:
    """Processes whose parent is this one and whose command line runs the App (`bot.cli`,
    `ci-registrar`): none should exist once every test has ended."""
    me, out = str(os.getpid()), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        ppid = stat.rsplit(")", 1)[1].split()[1]
        if ppid == me and ("bot.cli" in cmdline or "ci-registrar" in cmdline):
            out.append((int(entry.name), cmdline))
    return out


def end_of_session() -> list[str]:
    """Stop whatever is left; what was left, one line each (empty when every test cleaned up)."""
    left = stop_started_since(0)
    for pid, cmdline in stray_children():
        try:
            os.killpg(pid, signal.SIGKILL) if os.getpgid(pid) == pid else os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        left.append(f"{cmdline} (pid {pid}, not started through tests/processes.py)")
    return left
