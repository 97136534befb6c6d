"""Property tests: whatever a test file holds, scanning and checking it never raises, and every
finding points inside the file (1-based line and column)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checks.config.schema import Config
from checks.target.contract import read_contract
from checks.engine import check_tree
from checks.scanning.registrations import scan_file
from checks.scanning.tree import MemoryTree
from tests.fixtures.miles import miles_tree, test_file

test_file.__test__ = False

P = "tests/e2e/test_gen.py"
FAST = "tests/fast/test_gen.py"
CONTRACT = read_contract(MemoryTree(miles_tree()), Config())
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

FUNCTIONS = ["register_cpu_ci", "register_cuda_ci", "register_rocm_ci", "reg", "ci_register.register_rocm_ci"]
KEYWORDS = ["est_time", "suite", "labels", "nightly", "disabled", "lables", "hardware", "num_gpus", "suit"]
LITERALS = [
    "10", "0", "-5", "2.5", "1e999", "True", "False", "None",
    '"stage-a-cpu"', '"nightly-stage-c-4-gpu-mi350"', '"nightly-stage-c-4-gpu-mi35"', '"stage-c-4-gpu-h200"', "'é-ß'",
    '["long"]', "[]", '["long", "megatorn"]', '["long", 3]', '("long",)', '{"long"}', '{"a": 1}', '[["x"]]', '"""a\nb"""',
]
NON_LITERALS = ["X", "f()", "a.b", "[*xs]", "1 + 2", "lambda: 1", "(yield)", "-X", "not True", "[i for i in x]", 'f"{x}"']
WRAPPERS = ["{}", "if x:\n    {}", "def f():\n    {}", "x = {}", "class C:\n    {}", "with a:\n    {}", "{}; y = 1", "{}  # comment"]


@st.composite
def values(draw):
    if draw(st.booleans()):
        return draw(st.sampled_from(LITERALS))
    if draw(st.integers(0, 3)) == 0:
        return repr(draw(st.text(max_size=8)))
    return draw(st.sampled_from(NON_LITERALS))


@st.composite
def calls(draw):
    func = draw(st.sampled_from(FUNCTIONS))
    args = [draw(values()) for _ in range(draw(st.integers(0, 3)))]
    if draw(st.integers(0, 5)) == 0:
        args.insert(draw(st.integers(0, len(args))), "*args")
    kws = [f"{draw(st.sampled_from(KEYWORDS))}={draw(values())}" for _ in range(draw(st.integers(0, 5)))]
    if draw(st.integers(0, 5)) == 0:
        kws.append("**kw")
    parts = args + kws
    if draw(st.booleans()):
        inner = "".join(f"\n    {p}," for p in parts) + "\n"  # exploded, magic trailing comma
    else:
        inner = ", ".join(parts)
    call = f"{func}({inner})"
    return draw(st.sampled_from(WRAPPERS)).format(call)


@st.composite
def sources(draw) -> str:
    head = draw(
        st.sampled_from(
            [
                "from tests.ci.ci_register import register_cpu_ci, register_cuda_ci, register_rocm_ci\n\n",
                "from tests.ci.ci_register import register_rocm_ci as reg\nfrom tests.ci import ci_register\n",
                "",
                "\ufeff# -*- coding: utf-8 -*-\n",
            ]
        )
    )
    body = "\n".join(draw(st.lists(calls(), min_size=0, max_size=4)))
    tail = draw(st.sampled_from(["", "\n", "\n\n\ndef test_it():\n    assert True\n", "\nNUM_GPUS = 2\n", "\n# register_rocm_ci in a comment\n"]))
    return head + body + tail


def assert_within(findings, data: bytes, path: str) -> None:
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    # Python's own line ends: \r\n, \n and a lone \r
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for f in findings:
        if f.file != path:
            continue
        s = f.span
        where = f"{f.rule} {s} in a file of {len(lines)} line(s): {f.message[:100]}"
        assert 1 <= s.line <= len(lines), where
        assert s.column >= 1 and s.end_column >= 1, where
        assert s.line <= s.end_line <= len(lines), where
        if s.line == s.end_line:
            assert s.end_column >= s.column, where
        assert s.column <= len(lines[s.line - 1]) + 1 or s.column == 1, where


def scan_both(path: str, data: bytes) -> None:
    for exact in (True, False):
        scan = scan_file(path, data, CONTRACT, implicit_cpu=path.startswith("tests/fast/"), exact=exact)
        assert_within(scan.findings, data, path)
        for reg in scan.registrations:
            assert reg.span.line >= 1 and reg.span.column >= 1


def check_whole(path: str, data: bytes) -> None:
    report = check_tree(MemoryTree(miles_tree(**{path: data})))
    assert_within(report.findings, data, path)


@SETTINGS
@given(sources(), st.sampled_from([P, FAST]))
def test_generated_sources_scan_without_raising(source, path):
    scan_both(path, source.encode())


@settings(max_examples=60, deadline=None)
@given(sources())
def test_generated_sources_check_without_raising(source):
    check_whole(P, source.encode())


VALID = test_file(
    'register_cuda_ci(est_time=2200, suite="stage-c-4-gpu-h200", labels=["long"])',
    'register_rocm_ci(\n    est_time=2400,\n    suite="nightly-stage-c-4-gpu-mi350",  # nightly\n    labels=["long", "megatron"],\n)',
).encode()


@st.composite
def mutated(draw) -> bytes:
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["replace", "insert", "delete", "truncate"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "replace" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=4) | st.sampled_from([b"\r", b"\x00", b"(", b"[", b'"', b"\n    ", b"\xc3", b"\t"]))
        elif kind == "delete" and data:
            del data[pos : pos + draw(st.integers(1, 8))]
        elif kind == "truncate":
            del data[pos:]
    return bytes(data)


@SETTINGS
@given(mutated())
def test_mutated_bytes_scan_without_raising(data):
    # includes lone CR bytes: Python counts "\r" as a line break, GitHub (and the span contract) count "\n"
    scan_both(P, data)


@SETTINGS
@given(mutated())
def test_mutated_bytes_without_cr_scan_without_raising(data):
    scan_both(P, data.replace(b"\r", b""))


@settings(max_examples=60, deadline=None)
@given(mutated())
def test_mutated_bytes_check_without_raising(data):
    check_whole(P, data)


@SETTINGS
@given(st.binary(max_size=200))
def test_arbitrary_bytes_scan_without_raising(data):
    scan_both(P, b"register_rocm_ci(" + data)
