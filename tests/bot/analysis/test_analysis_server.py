"""The analysis server (bot/analysis/server.py): started once, it forks a bounded child per
job. The isolation is the fresh interpreter's: a child sees none of the worker's secrets, in its
environment or in the memory it inherited from the server, and it dies at its limits."""

from __future__ import annotations

import hashlib
import os
import resource
import secrets
import signal
import time


from bot.analysis import bounded as analysis, server as analysis_server
from bot.analysis.bounded import LimitExceeded, run_check_bounded
from checks.engine import check_tree
from checks.scanning.tree import MemoryTree
from tests.fixtures.miles import miles_tree, test_file
from tests.patience import PATIENCE

MARKER = b"CIREG-TEST-SECRET-"  # a secret is MARKER + 32 hex digits; the child is told only its hash
SECRET_ENV = "CI_REGISTRAR_TEST_INSTALLATION_TOKEN"


def _secret_hashes(memory: bytes) -> set[str]:
    """The SHA-256 of every MARKER + 32 hex digits found in `memory`."""
    found, at = set(), memory.find(MARKER)
    while at >= 0:
        candidate = memory[at:at + len(MARKER) + 32]
        if len(candidate) == len(MARKER) + 32:
            found.add(hashlib.sha256(candidate).hexdigest())
        at = memory.find(MARKER, at + 1)
    return found


def _memory_has(pid: int | str, digest: str) -> bool:
    """Whether the readable memory of process `pid` holds the secret whose SHA-256 is `digest`."""
    with open(f"/proc/{pid}/maps") as maps:
        regions = [line.split() for line in maps]
    fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    try:
        for fields in regions:
            if "r" not in fields[1] or (len(fields) > 5 and fields[5] in ("[vvar]", "[vsyscall]", "[vvar_vclock]")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            at = start
            while at < end:  # in slices that overlap by a secret's length, a few MB at a time
                size = min(8 << 20, end - at)
                try:
                    chunk = os.pread(fd, size + len(MARKER) + 32 if at + size < end else size, at)
                except OSError:
                    break
                if digest in _secret_hashes(chunk):
                    return True
                at += size
    finally:
        os.close(fd)
    return False


def _snooping_engine(head, base, changed, *, digest, **kw):
    """Everything a child could find of the worker's secret: its environment, its parent's (the
    monitor, a fork of the server), and every byte of its own memory (a copy of the server's)."""
    with open(f"/proc/{os.getppid()}/environ", "rb") as f:
        parent_environ = f.read()
    with open("/proc/self/environ", "rb") as f:
        own_environ = f.read()
    return {"environ": dict(os.environ), "in_environ": MARKER in own_environ or MARKER in parent_environ,
            "in_memory": _memory_has("self", digest), "pid": os.getpid(), "ppid": os.getppid()}


def test_a_child_sees_none_of_the_workers_secrets(monkeypatch):
    token = MARKER + secrets.token_hex(16).encode()
    digest = hashlib.sha256(token).hexdigest()
    monkeypatch.setenv(SECRET_ENV, token.decode())
    monkeypatch.setenv("DATABASE_URL", "postgresql://user:" + token.decode() + "@db/test")
    kept_in_memory = [token.decode()]  # as the worker keeps an installation token
    # The server started now, while the worker's environment and memory hold the secret.
    analysis_server.server().stop()
    # A yardstick: the search does find the secret where it is (this process's memory).
    assert _memory_has("self", digest) and kept_in_memory
    seen = run_check_bounded(MemoryTree(miles_tree()), config_text=None, timeout_s=PATIENCE, memory_bytes=2 << 30,
                             engine="tests.bot.analysis.test_analysis_server:_snooping_engine", arguments={"digest": digest})
    assert SECRET_ENV not in seen["environ"] and "DATABASE_URL" not in seen["environ"]
    assert set(seen["environ"]) <= set(analysis_server.ENV_KEPT)
    assert not seen["in_environ"]
    assert not seen["in_memory"]
    assert seen["ppid"] != os.getpid()  # a grandchild of the server, never a fork of this process
    server_pid = analysis_server.server().pid
    with open(f"/proc/{server_pid}/environ", "rb") as f:
        assert MARKER not in f.read()
    assert not _memory_has(server_pid, digest)


def _limits_engine(head, base, changed, **kw):
    return {"as": resource.getrlimit(resource.RLIMIT_AS), "cpu": resource.getrlimit(resource.RLIMIT_CPU)}


def test_the_child_sets_its_memory_and_cpu_limits_before_the_engine_runs():
    limits = run_check_bounded(MemoryTree(miles_tree()), config_text=None, timeout_s=7, memory_bytes=700 << 20,
                               engine="tests.bot.analysis.test_analysis_server:_limits_engine")
    assert limits == {"as": (700 << 20, 700 << 20), "cpu": (17, 22)}


def _spinning_engine(head, base, changed, **kw):
    resource.setrlimit(resource.RLIMIT_CPU, (1, 2))  # its own limit, lowered: the worker's clock is far
    while True:
        pass


def test_a_child_dies_at_its_cpu_limit():
    outcome = run_check_bounded(MemoryTree(miles_tree()), config_text=None, timeout_s=PATIENCE, memory_bytes=1 << 30,
                                engine="tests.bot.analysis.test_analysis_server:_spinning_engine")
    assert isinstance(outcome, LimitExceeded) and outcome.limit == "timeout_s"
    assert "CPU time" in outcome.detail


def _hungry_engine(head, base, changed, **kw):
    hoard = []
    while True:
        hoard.append(bytearray(16 * 1024 * 1024))


def test_a_child_dies_at_its_memory_limit_and_the_server_lives_on():
    server = analysis_server.server()
    server.start()
    pid = server.pid
    outcome = run_check_bounded(MemoryTree(miles_tree()), config_text=None, timeout_s=PATIENCE,
                                memory_bytes=300 << 20, engine="tests.bot.analysis.test_analysis_server:_hungry_engine")
    assert isinstance(outcome, LimitExceeded) and outcome.limit == "memory_bytes"
    assert server.pid == pid and os.path.exists(f"/proc/{pid}")


def test_a_dead_server_is_started_again():
    head = MemoryTree(miles_tree(**{"tests/e2e/test_x.py": test_file('register_cpu_ci(est_time=1, suite="stage-a-cpux")')}))
    server = analysis_server.server()
    server.start()
    os.kill(server.pid, signal.SIGKILL)
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline and os.waitpid(server.pid, os.WNOHANG) == (0, 0):
        time.sleep(0.01)  # reaped here, as the Popen would
    assert run_check_bounded(head, timeout_s=PATIENCE, memory_bytes=1 << 30) == check_tree(head)


def test_files_announced_by_the_engine_cross_in_one_message(monkeypatch):
    """The engine's prefetch brings every announced file's bytes in one answer: a check of a
    tree and its base asks for no file one by one."""
    base = MemoryTree(miles_tree())
    changes = {f"tests/e2e/test_n{i}.py": test_file(f'register_cpu_ci(est_time={i + 1}, suite="stage-a-cpu")') for i in range(8)}
    head = MemoryTree(miles_tree(**changes))
    one_by_one: list[str] = []
    original = analysis._read_one
    monkeypatch.setattr(analysis, "_read_one", lambda tree, path, limits: one_by_one.append(path) or original(tree, path, limits))
    reads: list[tuple] = []
    real_read = MemoryTree.read
    monkeypatch.setattr(MemoryTree, "read", lambda self, path: reads.append(path) or real_read(self, path))
    changed = {p: None for p in changes}
    report = run_check_bounded(head, base, changed, config_text=None, timeout_s=PATIENCE, memory_bytes=1 << 30)
    assert report == check_tree(head, base, changed, config_text=None)
    assert set(changes) <= set(reads)  # the changed files were read by the worker...
    assert one_by_one == []  # ...and handed over in bulk answers, none on its own


def test_the_childrens_cpu_is_counted():
    before = analysis.children_cpu_s()
    run_check_bounded(MemoryTree(miles_tree()), config_text=None, timeout_s=PATIENCE, memory_bytes=1 << 30,
                      engine="tests.bot.analysis.test_analysis_server:_busy_engine")
    assert analysis.children_cpu_s() - before >= 0.2


def _busy_engine(head, base, changed, **kw):
    end = time.process_time() + 0.25
    while time.process_time() < end:
        pass


PRELOADED_CHECK = r'''
import sys
from bot.analysis.server import _preload
_preload()
from checks.engine import check_tree
from checks.scanning.tree import MemoryTree
from tests.fixtures.miles import miles_tree, test_file
from bot.ondemand.selection import analyse
from checks.config.schema import load_config

base = miles_tree()
head = miles_tree(**{"tests/e2e/test_added.py": test_file('register_rocm_ci(est_time=300, suite="stage-c-4-gpu-mi350")')})
config = base.get(".github/ci-registrar.yml")
before = set(sys.modules)
durations = [{"file": "tests/e2e/test_added.py", "backend": "rocm", "hardware": "mi355x", "n": 10, "median": 250.0,
              "p90": 280.0, "max": 290.0, "values": [250.0] * 10}]
check_tree(MemoryTree(head), MemoryTree(base), {"tests/e2e/test_added.py": None}, config_text=config, durations=durations,
           consumers_from={})
analyse(MemoryTree(head), MemoryTree(base), config=load_config(config)[0], suite="stage-c-4-gpu-mi350", head_sha="a" * 40)
print(" ".join(sorted(set(sys.modules) - before)))
'''


def test_a_check_in_a_preloaded_server_imports_nothing():
    """Every child of the analysis server starts from its memory: a module the engine imports on
    its way (a function-level import) would be imported again at every check. _preload holds what
    a PR check (diff, durations, summary) and a /run-rocm selection import."""
    import subprocess
    import sys

    from tests import REPO

    done = subprocess.run([sys.executable, "-c", PRELOADED_CHECK], capture_output=True, text=True, cwd=REPO,
                          timeout=PATIENCE)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == []
