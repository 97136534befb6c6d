"""The analysis server: one interpreter, started once, that holds the engine and no credentials,
and forks a bounded child for every analysis (bot/analysis/bounded.py runs the job in the child).

Why: a fresh interpreter per analysis (`python -m ...`) re-imported the engine every time, about
0.25 CPU-s of a warm PR check whose engine work is a tenth of that. A fork of a process that has
imported the engine already starts in about a millisecond.

Isolation is the fresh interpreter's, kept by how the server starts and what it holds:
- it is exec'd (`python -m bot.analysis.server FD`), never forked from the worker: none of
  the worker's memory (the App's private key, installation tokens, caches), threads or sockets
  exists in it, whenever it is started;
- its environment is scrubbed (ENV_KEPT: the interpreter's own variables and the analysis'
  limits), so neither the server nor a child can read a secret from its environment;
- its only channel is a Unix socket to the worker that started it; when the worker goes, the
  socket closes and the server leaves.

A job is three file descriptors the worker passes over that socket (SCM_RIGHTS): the job's own
socket (the analysis protocol of bot/analysis/bounded.py), a status socket and a one-page shared
memory (memfd) where the child writes the file it is reading. For each, the server forks a
monitor, which forks the child:
- the child sets its memory (RLIMIT_AS) and CPU (RLIMIT_CPU) limits before it runs the engine
  (bot.analysis.child.child_job), exactly as the fresh interpreter did;
- the monitor tells the worker the child's pid, relays the signals the worker asks for (SIGSTOP
  and SIGCONT when the job yields its slot, SIGKILL at its time limit: only the process that reaps
  the child signals it, so a pid is never signalled after its reuse), and reports its exit status
  and CPU time (wait4) when it ends. A monitor whose worker is gone kills its child.
The server itself never runs a job: a child that crashes or is killed costs that job only.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection

# The variables a server gets from the worker's environment: the interpreter's and the locale's,
# nothing that could hold a credential (the App's key, tokens, database and Redis URLs).
ENV_KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "PYTHONPATH", "PYTHONHASHSEED",
            "PYTHONDONTWRITEBYTECODE", "PYTHONUTF8", "VIRTUAL_ENV")
START_TIMEOUT_S = 60.0
REAP_EVERY_S = 1.0  # how often an idle server waits for its ended monitors  # how long a job waits for its child's pid before the server counts as gone


def scrubbed_env(environ=None) -> dict[str, str]:
    environ = os.environ if environ is None else environ
    return {k: environ[k] for k in ENV_KEPT if k in environ}


class ServerGone(Exception):
    """The server did not take the job (it died, or never started): the caller starts another."""


class Job:
    """One analysis in a child of the server, seen from the worker."""

    def __init__(self, conn: Connection, status: Connection, mark, pid: int):
        self.conn, self.status, self._mark, self.pid = conn, status, mark, pid
        self.exitcode: int | None = None
        self.cpu_s = 0.0
        self._exited = False

    def signal(self, signum: int) -> None:
        """Asks the monitor to signal the child (nothing happens once it has ended)."""
        if self._exited:
            return
        try:
            self.status.send(("signal", signum))
        except (BrokenPipeError, OSError):
            pass

    def wait(self, timeout: float) -> int | None:
        """The child's exit code (negative: the signal that ended it), or None if it is still running."""
        if not self._exited and self.status.poll(timeout):
            try:
                message = self.status.recv()
            except (EOFError, OSError):
                message = ("exit", None, 0.0)
            if message[0] == "exit":
                self._exited = True
                self.exitcode, self.cpu_s = message[1], message[2]
        return self.exitcode if self._exited else None

    @property
    def exited(self) -> bool:
        return self._exited

    def last_file(self) -> str | None:
        """The file the child read last (it writes the path into the shared page before each read)."""
        size = int.from_bytes(self._mark[:2], "little")
        if not size:
            return None
        return bytes(self._mark[2:2 + size]).decode("utf-8", "replace")

    def close(self) -> None:
        """Stops the child if it still runs, waits for its status (its CPU counted), closes the channels."""
        if not self._exited:
            self.signal(signal.SIGKILL)
            self.wait(5.0)
        self.conn.close()
        self.status.close()
        self._mark.close()


class Server:
    """The worker's handle on its analysis server: started on first use, started again if it dies."""

    def __init__(self):
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._control: socket.socket | None = None

    def start(self) -> None:
        with self._lock:
            self._ensure()

    def _ensure(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            return
        self._stop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "bot.analysis.server", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), close_fds=True, env=scrubbed_env(), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL)
        finally:
            theirs.close()
        self._control = ours

    def _stop(self) -> None:
        if self._control is not None:
            self._control.close()  # the server reads EOF and leaves
            self._control = None
        if self._proc is not None:
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def stop(self) -> None:
        with self._lock:
            self._stop()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def submit(self) -> Job:
        """A new child of the server, its pid known; it waits for its job on Job.conn."""
        for attempt in (1, 2):
            try:
                return self._submit()
            except ServerGone:
                if attempt == 2:
                    raise
                with self._lock:
                    if self._proc is not None and self._proc.poll() is None:
                        self._proc.kill()
                    self._stop()
        raise AssertionError("unreachable")

    def _submit(self) -> Job:
        import mmap

        job_ours, job_theirs = socket.socketpair()
        status_ours, status_theirs = socket.socketpair()
        mark_fd = os.memfd_create("ci-registrar-analysis-file", os.MFD_CLOEXEC)
        try:
            os.ftruncate(mark_fd, mmap.PAGESIZE)
            mark = mmap.mmap(mark_fd, mmap.PAGESIZE)
            with self._lock:
                self._ensure()
                try:
                    socket.send_fds(self._control, [b"job"], [job_theirs.fileno(), status_theirs.fileno(), mark_fd])
                except OSError as exc:
                    raise ServerGone(str(exc)) from None
        finally:
            job_theirs.close()
            status_theirs.close()
            os.close(mark_fd)
        conn = Connection(job_ours.detach())
        status = Connection(status_ours.detach())
        try:
            if not status.poll(START_TIMEOUT_S):
                raise ServerGone("no child started")
            kind, pid = status.recv()
        except (EOFError, OSError, ServerGone) as exc:
            conn.close()
            status.close()
            mark.close()
            raise ServerGone(str(exc)) from None
        return Job(conn, status, mark, pid)


_SERVER = Server()


def server() -> Server:
    return _SERVER


# -- in the server process ------------------------------------------------------------------------
def _preload() -> None:
    """Imports what every job uses, so that a child starts with it (copy-on-write, never again)."""
    import checks.engine  # noqa: F401 - the default engine and everything it imports
    import checks.reporting.render  # noqa: F401 - a LimitExceeded's and the report's pickles
    import bot.analysis.child  # noqa: F401 - the child's side of the protocol
    import checks.calibration.shards  # noqa: F401 - imported by the engine on its first check
    import checks.reporting.pr_summary  # noqa: F401
    import symtable  # noqa: F401
    # What a PR check and a /run-rocm selection (bot.ondemand.selection, imported by name as the
    # job's engine: it imports this package) import on their way (function-level imports: the
    # command line loads them only when it needs them). A child that imports them pays for it at
    # every check: a tenth of a warm check's analysis (issue 38). tests/bot/analysis pins that a
    # check in a preloaded process imports nothing.
    import hashlib  # noqa: F401 - the contract's fingerprint
    import checks.scanning.scan_facts  # noqa: F401
    import checks.scanning.tree  # noqa: F401
    import checks.target.dispatch_plan  # noqa: F401 - the summary's run plans
    import checks.target.run_cost  # noqa: F401
    import checks.target.runner_policy  # noqa: F401
    import checks.target.target_ci  # noqa: F401
    import checks.target.timeout_model  # noqa: F401
    import checks.calibration.durations_index  # noqa: F401 - a check with stored durations
    import checks.calibration.policy  # noqa: F401


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    os.dup2(2, 1)  # stray prints go to stderr, never anywhere a job reads
    _preload()
    import gc

    gc.collect()
    gc.freeze()  # what is loaded now stays shared with every child: the collector never touches it
    control.settimeout(REAP_EVERY_S)
    while True:
        _reap()
        try:
            message, fds, _flags, _addr = socket.recv_fds(control, 16, 3)
        except socket.timeout:
            continue
        except OSError:
            return
        if not message:
            return  # the worker is gone
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            try:
                control.close()
                _monitor(*fds)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)


def _reap() -> None:
    """Waits for the monitors that ended: their CPU, and their child's, is then counted in this
    process's own accounting (RUSAGE_CHILDREN, /proc's cutime), as the worker's benchmarks read it."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _monitor(job_fd: int, status_fd: int, mark_fd: int) -> None:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(status_fd)
            from bot.analysis.child import child_job

            child_job(job_fd, mark_fd)
            code = 0
        finally:
            try:
                sys.stderr.flush()
            finally:
                os._exit(code)
    os.close(job_fd)  # the worker sees the job's socket close when the child ends
    os.close(mark_fd)
    status = Connection(status_fd)
    try:
        status.send(("pid", pid))
    except OSError:
        os.kill(pid, signal.SIGKILL)
    child = os.pidfd_open(pid)
    while True:
        ready, _, _ = select.select([child, status_fd], [], [])
        if child in ready:
            _, wait_status, usage = os.wait4(pid, 0)
            try:
                status.send(("exit", os.waitstatus_to_exitcode(wait_status), usage.ru_utime + usage.ru_stime))
            except OSError:
                pass
            return
        try:
            _, signum = status.recv()
        except (EOFError, OSError, ValueError, TypeError):
            signum = signal.SIGKILL  # the worker is gone (or speaks nonsense): the job is over
            os.kill(pid, signum)
            os.wait4(pid, 0)
            return
        if signum in (signal.SIGSTOP, signal.SIGCONT, signal.SIGKILL):
            os.kill(pid, signum)


if __name__ == "__main__":
    main()
