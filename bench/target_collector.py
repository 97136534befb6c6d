"""The yardstick for timing: each target's own collection code, run as is, as a whole process.

A figure such as "the first check of miles takes 0.9x of miles' collector" is only as honest as
the collector it divides by. So the timing yardstick is not an adapter of ours: it is the few
lines by which the target's own runner collects its registrations, executed in a fresh Python in
the root of an exported tree of the target:

- miles (tests/ci/run_suite.py): `collect_tests(discover_ci_files())` from tests/ci/ci_register.py,
  imported as the runner imports it (`tests.ci.ci_register`, with the tree root on sys.path);
- sglang (test/run_suite.py, `run_a_suite`): the runner's own glob of test/registered/**/*.py
  (without conftest.py and __init__.py) and `collect_tests(files, sanity_check=True)` from
  python/sglang/test/ci/ci_register.py. That module imports only the standard library; it is
  loaded from its file under its own name because `import sglang` would first run the package's
  __init__, which needs torch and is no part of the collection.

Each prints the number of registrations it collected, so a run can be checked against the
engine's JSON (`registrations`, implicit ones included) before it is timed.

bench/fidelity_collector.py is something else: an adapter that finds the collection inside any
historical revision of a runner, for the agreement sweep of bench/fidelity.py. It is not used as
a timing yardstick.

    python bench/target_collector.py miles /path/to/miles-tree      # prints the count
"""

from __future__ import annotations

import subprocess
import sys

MILES = """\
import sys
sys.path.insert(0, ".")
from tests.ci.ci_register import collect_tests, discover_ci_files
print(len(collect_tests(discover_ci_files())))
"""

SGLANG = """\
import glob, importlib.util, os, sys
spec = importlib.util.spec_from_file_location("sglang.test.ci.ci_register", "python/sglang/test/ci/ci_register.py")
ci_register = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = ci_register
spec.loader.exec_module(ci_register)
script_dir = os.path.abspath("test")
files = [
    f
    for f in glob.glob(os.path.join(script_dir, "registered", "**", "*.py"), recursive=True)
    if os.path.basename(f) not in ("conftest.py", "__init__.py")
]
print(len(ci_register.collect_tests(files, sanity_check=True)))
"""

CODE = {"miles": MILES, "sglang": SGLANG}


def command(target: str, python: str = sys.executable) -> list[str]:
    """The whole-process command to run with cwd = the root of the target's tree."""
    return [python, "-c", CODE[target]]


def count(target: str, tree: str) -> int:
    done = subprocess.run(command(target), cwd=tree, capture_output=True, text=True, check=True)
    return int(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    print(count(sys.argv[1], sys.argv[2]))
