"""A file whose findings are reported must parse whole (REG001 anywhere in it), but its
registrations sit in its first part: when the symbol-table builder accepts the whole file, the
scanner reads the tree of the prefix up to the last register mention only
(checks/scanning/registrations.py, _FileReader.run), and reads the whole tree when something past
the prefix matters (an alias, a mention it does not account for, a NUM_GPUS line). A derived
answer must equal the source answer: each composed module is scanned both ways and compared."""

import dataclasses
import random

from checks.scanning import registrations
from checks.scanning.registrations import scan_file
from checks.config.schema import Config
from checks.target.contract import read_contract
from checks.scanning.tree import MemoryTree
from tests.fixtures.miles import miles_tree

CONTRACT = read_contract(MemoryTree(miles_tree()), Config())

HEAD = [
    'import os\n',
    'from tests.ci.ci_register import register_cuda_ci, register_amd_ci\n',
    'from tests.ci.ci_register import register_cuda_ci as cuda\n',
    '"""A module docstring that says NUM_GPUS = 8 and register_cuda_ci."""\n',
    'NUM_GPUS = 4\n',
]
REGISTRATIONS = [
    'register_cuda_ci(est_time=60, suite="stage-b-1-gpu", num_gpus=1)\n',
    'register_amd_ci(est_time=600, suite="nightly-stage-c-4-gpu-mi350", labels=["long"])\n',
    'register_cuda_ci(est_time=-5, suite="no-such-suite")\n',
    'register_cuda_ci(\n    est_time=60,\n    suite="stage-b-1-gpu",\n)\n',
]
TAIL = [
    'def test_it():\n    assert os.sep\n',
    'NUM_GPUS = 8\n',
    'x = """\nNUM_GPUS = 2\n"""\n',
    '# register_cuda_ci(est_time=1, suite="a comment past the last call")\n',
    'def helper():\n    register_cuda_ci(est_time=1, suite="inside a function")\n',
    'cuda(est_time=1, suite="through the alias")\n',
    'from tests.ci.ci_register import register_cpu_ci\n',
    'class T:\n    def test(self):\n        pass\n',
    'if __name__ == "__main__":\n    test_it()\n',
    'def broken(:\n    pass\n',
    'nonlocal x\n',
    'value = (\n',
]


def scanned_both_ways(data: bytes):
    prefix = scan_file("tests/e2e/test_x.py", data, CONTRACT, exact=True)
    original = registrations._FileReader._may_read_prefix_only
    registrations._FileReader._may_read_prefix_only = lambda self: False  # always the whole tree
    try:
        whole = scan_file("tests/e2e/test_x.py", data, CONTRACT, exact=True)
    finally:
        registrations._FileReader._may_read_prefix_only = original
    return dataclasses.asdict(prefix), dataclasses.asdict(whole)


def test_the_prefix_reads_what_the_whole_tree_reads():
    rng = random.Random(28)
    read_by_prefix = 0
    for _ in range(600):
        parts = rng.sample(HEAD, rng.randint(0, 3)) + rng.sample(REGISTRATIONS, rng.randint(1, 3)) + rng.sample(TAIL, rng.randint(0, 4))
        data = "".join(parts).encode()
        prefix, whole = scanned_both_ways(data)
        assert prefix == whole, data.decode()
        text = data.decode()
        if registrations.registration_prefix(text) is not None and registrations._symtable_accepts(text, "t.py"):
            read_by_prefix += 1
    assert read_by_prefix > 100  # the comparison covers the path it is about


def test_a_syntax_error_past_the_last_registration_is_still_reg001():
    data = b'register_cuda_ci(est_time=60, suite="stage-b-1-gpu")\n\ndef broken(:\n    pass\n'
    prefix, whole = scanned_both_ways(data)
    assert prefix == whole
    assert prefix["unreadable"] and [f["rule"] for f in prefix["findings"]] == ["REG001"]


def test_a_call_inside_a_function_past_the_prefix_is_still_reg003():
    data = (b'register_cuda_ci(est_time=60, suite="stage-b-1-gpu")\n\n'
            b'def helper():\n    register_cuda_ci(est_time=1, suite="stage-b-1-gpu")\n')
    prefix, whole = scanned_both_ways(data)
    assert prefix == whole
    assert prefix["invisible"] == 1
