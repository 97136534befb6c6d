"""The engine on real contract files of its two targets, at revisions that differ (fixtures under
tests/fixtures/targets/, excerpts of radixark/miles and sgl-project/sglang; docs/fidelity.md).

Each expected value is what the target's OWN collector (its ci_register.collect_tests and its
runner's discovery, at that commit) gives for the fixture tree, and what its runner accepts.
Where the engine agrees today the test passes. Where it does not, the test is
`xfail(strict=True)` with the correct expectation: when the engine is fixed, the xfail turns into
an XPASS, which fails the run, and the marker must then be removed so the test guards the fix.
No network, no clone of the targets: only the vendored excerpts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.config.schema import Config
from checks.target.contract import read_contract
from checks.engine import check_tree
from checks.model import Backend
from checks.scanning.tree import DirectoryTree, MemoryTree
from tests import FIXTURES
from tests.fixtures.sglang import SGLANG_CONFIG  # what bench/fidelity.py writes for sglang

TARGETS = FIXTURES / "targets"
MILES_APR = TARGETS / "miles" / "r2026-04-22-110e7c9"
MILES_MAY = TARGETS / "miles" / "r2026-05-28-5487e4a"
MILES_AUG = TARGETS / "miles" / "r2026-08-21-778227d"
SGLANG_APR = TARGETS / "sglang" / "r2026-04-20-6cc2eee"
SGLANG_JUN = TARGETS / "sglang" / "r2026-06-29-3e16be2"
SGLANG_AUG = TARGETS / "sglang" / "r2026-08-22-382343f"


def run(root: Path, config: str | None = None):
    if config is None:
        return check_tree(DirectoryTree(root))
    return check_tree(DirectoryTree(root), config_text=config)


def keys(report, *, implicit: bool = True) -> set[tuple]:
    return {(r.file, r.backend.value, r.suite, float(r.est_time)) for r in report.registrations if implicit or not r.implicit}


def failures(report) -> set[tuple]:
    return {(f.rule, f.file) for f in report.findings if f.severity.value == "failure"}


def xfail(reason: str):
    return pytest.mark.xfail(strict=True, reason=reason)


# -- radixark/miles ---------------------------------------------------------------------------

# collect_tests of 110e7c9 over that runner's discovery (tests/e2e/**/*.py, tests/fast/**/test_*,
# tests/utils/test_*.py), sanity_check=False
MILES_APR_TARGET = {
    ("tests/e2e/ckpt/test_qwen3_4B_ckpt.py", "cuda", "stage-c-ckpt-8-gpu", 1200.0),
    ("tests/fast/rollout/generate_hub/test_single_turn.py", "cuda", "stage-b-fast-1-gpu", 60.0),
    ("tests/utils/test_sglang_config.py", "cpu", "stage-a-fast", 60.0),
}
MILES_MAY_EXPLICIT = {
    ("tests/e2e/ckpt/test_qwen3_4B_ckpt.py", "cuda", "stage-c-8-gpu-h100", 1200.0),
    ("tests/fast-gpu/test_mxfp8_quantizer.py", "cuda", "stage-b-2-gpu-h200", 60.0),
}
MILES_MAY_IMPLICIT = {("tests/fast/backends/megatron_utils/test_fp32_param_utils.py", "cpu", "stage-a-cpu", 1.0)}
MILES_AUG_EXPLICIT = {
    ("tests/e2e/ckpt/test_qwen3_4B_ckpt.py", "cuda", "stage-c-8-gpu-h100", 1400.0),
    ("tests/e2e/ckpt/test_qwen3_4B_ckpt.py", "rocm", "nightly-stage-c-8-gpu-mi350", 1200.0),
    ("tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py", "cuda", "stage-c-4-gpu-h200", 2200.0),
    ("tests/e2e/fsdp/test_qwen3_0.6B_fsdp_distributed.py", "rocm", "nightly-stage-c-4-gpu-mi350", 2400.0),
    ("tests/fast-gpu/test_det_process_group.py", "cuda", "stage-c-4-gpu-h200", 240.0),
    ("tests/fast-gpu/test_det_process_group.py", "rocm", "nightly-stage-c-4-gpu-mi350", 40.0),
    ("tests/fast/backends/megatron_utils/test_hf_weight_iterator_direct.py", "cpu", "stage-a-cpu", 60.0),
}
MILES_AUG_IMPLICIT = {("tests/fast/backends/megatron_utils/test_checkpoint_transfer.py", "cpu", "stage-a-cpu", 1.0)}


def test_miles_april_registrations_in_the_engines_roots_are_read_with_num_gpus():
    report = run(MILES_APR)
    assert MILES_APR_TARGET - {k for k in MILES_APR_TARGET if k[0].startswith("tests/utils/")} <= keys(report)
    # the signature is read from this revision: num_gpus= is accepted
    assert not [f for f in report.findings if f.rule == "REG002" and "num_gpus" in f.message]


def test_miles_april_discovery_matches_that_revisions_runner():
    assert keys(run(MILES_APR)) == MILES_APR_TARGET


def test_miles_april_cuda_under_tests_fast_is_accepted():
    assert ("REG002", "tests/fast/rollout/generate_hub/test_single_turn.py") not in failures(run(MILES_APR))


def test_miles_april_unregistered_e2e_file_is_not_a_failure():
    assert ("REG004", "tests/e2e/megatron/test_qwen3_4B_p2p.py") not in failures(run(MILES_APR))


@pytest.mark.parametrize("root", [MILES_APR, MILES_MAY], ids=["april", "may"])
def test_miles_inventory_of_per_commit_and_nightly_suites_is_read(root):
    """Before July the inventory was PER_COMMIT_SUITES + NIGHTLY_SUITES: read from the module itself."""
    contract = read_contract(DirectoryTree(root), Config())
    assert contract.inventory_known
    assert "stage-a-cpu" in contract.suite_names(Backend.CPU) or "stage-a-fast" in contract.suite_names(Backend.CPU)


def test_miles_may_explicit_registrations_agree():
    assert keys(run(MILES_MAY), implicit=False) == MILES_MAY_EXPLICIT


def test_miles_may_cuda_without_labels_is_accepted():
    """In May `labels: list[str] | None = None` on every backend: a GPU test without a label was accepted."""
    assert failures(run(MILES_MAY)) == set()


@pytest.mark.parametrize("root,explicit,implicit", [(MILES_MAY, MILES_MAY_EXPLICIT, MILES_MAY_IMPLICIT), (MILES_AUG, MILES_AUG_EXPLICIT, MILES_AUG_IMPLICIT)], ids=["may", "august"])
def test_miles_implicit_cpu_registrations_are_reported(root, explicit, implicit):
    assert keys(run(root)) == explicit | implicit


def test_miles_august_explicit_registrations_agree_and_nothing_fails():
    report = run(MILES_AUG)
    assert keys(report, implicit=False) == MILES_AUG_EXPLICIT
    assert failures(report) == set()


def _miles_aug_files() -> dict[str, bytes]:
    return {str(p.relative_to(MILES_AUG)): p.read_bytes() for p in MILES_AUG.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "call",
    [
        'register_cuda_ci(est_time=240, suite="stage-c-4-gpu-h200")',  # labels are required since 2026-08-16
        'register_cuda_ci(est_time=240, suite="stage-c-4-gpu-h200", labels=[])',  # ... and must be non-empty
        'register_cuda_ci(est_time=240, suite="stage-c-4-gpu-h200", labels=["no-such-label"])',  # not in KNOWN_LABELS
        'register_cuda_ci(est_time=240, suite="stage-c-4-gpu-h200", labels=["precision"], num_gpus=4)',  # gone since May
    ],
)
def test_miles_august_rejects_what_that_revisions_collector_rejects(call):
    files = _miles_aug_files()
    path = "tests/fast-gpu/test_det_process_group.py"
    text = files[path].decode()
    files[path] = text.replace('register_cuda_ci(est_time=240, suite="stage-c-4-gpu-h200", labels=["precision"])', call).encode()
    assert call in files[path].decode()
    assert ("REG002", path) in failures(check_tree(MemoryTree(files)))


def _miles_aug_with(path: str, old: str, new: str) -> dict[str, bytes]:
    files = _miles_aug_files()
    text = files[path].decode()
    assert old in text
    files[path] = text.replace(old, new).encode()
    return files


CKPT = "tests/e2e/ckpt/test_qwen3_4B_ckpt.py"
CKPT_CUDA = 'register_cuda_ci(est_time=1400, suite="stage-c-8-gpu-h100", labels=["ckpt"])'


def test_miles_august_disabled_blackwell_registration_is_never_moved_to_other_hardware():
    """The issue's case: a deliberately disabled B200 registration (miles has no Blackwell CI) is a
    finding, but no did-you-mean or one-click fix moves it to H200 (or to another GPU count)."""
    call = 'register_cuda_ci(est_time=1400, suite="stage-c-8-gpu-b200", labels=["ckpt"], disabled="Blackwell CI not supported")'
    report = check_tree(MemoryTree(_miles_aug_with(CKPT, CKPT_CUDA, call)), fixes=True)
    (f,) = [f for f in report.findings if f.rule == "REG010" and f.file == CKPT]
    assert f.suggestion is None and f.fix is None
    assert "h200" not in f.message and "h100" not in f.message and "did you mean" not in f.message


def test_miles_august_an_8_gpu_test_is_offered_only_8_gpu_suites():
    call = 'register_cuda_ci(est_time=1400, suite="stage-c-8-gpu-h300", labels=["ckpt"])'
    report = check_tree(MemoryTree(_miles_aug_with(CKPT, CKPT_CUDA, call)), fixes=True)
    (f,) = [f for f in report.findings if f.rule == "REG010" and f.file == CKPT]
    assert "did you mean `stage-c-8-gpu-h100` or `stage-c-8-gpu-h200`?" in f.message  # h300 is a typo: no such model
    assert "-2-gpu-" not in f.message and "-4-gpu-" not in f.message
    assert f.suggestion is None  # two equally near: no one-click fix


# -- sgl-project/sglang -----------------------------------------------------------------------

SGLANG_APR_TARGET = {
    ("test/registered/amd/accuracy/mi30x/test_deepseek_r1_eval_amd.py", "amd", "nightly-amd-accuracy-8-gpu-deepseek-r1", 7200.0),
    ("test/registered/ascend/basic_function/HiCache/test_npu_hicache_mha.py", "npu", "stage-b-test-1-npu-a2", 400.0),
    ("test/registered/ascend/basic_function/HiCache/test_npu_hicache_mha.py", "npu", "nightly-1-npu-a3", 400.0),
    ("test/registered/attention/test_create_kvindices.py", "cuda", "stage-b-test-1-gpu-small", 7.0),
    ("test/registered/attention/test_create_kvindices.py", "amd", "stage-b-test-1-gpu-small-amd", 10.0),
    ("test/registered/debug_utils/comparator/testing_helpers.py", "cpu", "stage-a-test-cpu", 0.0),
}
SGLANG_AUG_TARGET = {
    ("test/registered/4-gpu-models/test_deepseek_v3_cutedsl_4gpu.py", "cuda", "base-c-test-4-gpu-gb300", 1800.0),
    ("test/registered/attention/test_chunk_gated_delta_rule.py", "cuda", "base-b-test-1-gpu-large", 11.0),
    ("test/registered/attention/test_chunk_gated_delta_rule.py", "amd", "stage-b-test-1-gpu-large-amd", 11.0),
    ("test/registered/attention/test_chunk_gated_delta_rule.py", "xpu", "stage-b-test-1-gpu-xpu", 900.0),
    ("test/registered/attention/test_create_kvindices.py", "cuda", "base-b-test-1-gpu-small", 7.0),
    ("test/registered/attention/test_create_kvindices.py", "amd", "stage-b-test-1-gpu-small-amd", 10.0),
    ("test/registered/spec/eagle/test_spec_eagle_parity.py", "cuda", "base-b-test-1-gpu-large", 360.0),
    ("test/registered/spec/eagle/test_spec_eagle_parity.py", "xpu", "nightly-xpu-1-gpu", 360.0),
}


def test_sglang_april_cpu_and_cuda_registrations_are_read():
    found = keys(run(SGLANG_APR, SGLANG_CONFIG))
    assert ("test/registered/attention/test_create_kvindices.py", "cuda", "stage-b-test-1-gpu-small", 7.0) in found
    assert ("test/registered/debug_utils/comparator/testing_helpers.py", "cpu", "stage-a-test-cpu", 0.0) in found


def test_sglang_april_every_backend_is_read():
    assert keys(run(SGLANG_APR, SGLANG_CONFIG)) == SGLANG_APR_TARGET


def test_sglang_april_amd_and_npu_only_files_are_registered():
    bad = {f for r, f in failures(run(SGLANG_APR, SGLANG_CONFIG)) if r == "REG004"}
    assert bad == set()


def test_sglang_april_est_time_zero_is_accepted():
    assert ("REG002", "test/registered/debug_utils/comparator/testing_helpers.py") not in failures(run(SGLANG_APR, SGLANG_CONFIG))


def test_sglang_april_inventory_keys_of_every_backend_are_read():
    report = run(SGLANG_APR, SGLANG_CONFIG)
    assert not [f for f in report.findings if f.rule == "REG901" and "not HWBackend" in f.message]


def test_sglang_june_unknown_suites_fail_as_sglangs_own_validation_fails():
    # At 3e16be2 sglang's validate_all_suites rejected these registrations (the inventory says
    # base-b-kernel-unit-test-...): the engine's REG010 is right.
    report = run(SGLANG_JUN, SGLANG_CONFIG)
    assert {(f.rule, f.file) for f in report.findings if f.rule == "REG010"} == {
        ("REG010", "test/registered/dcp/test_reduce_scatter_along_dim.py"),
        ("REG010", "test/registered/jit/test_dsv3_fused_a_gemm.py"),
        ("REG010", "test/registered/jit/benchmark/bench_symm_mem_all_gather.py"),
    }
    assert failures(report) >= {
        ("REG010", "test/registered/dcp/test_reduce_scatter_along_dim.py"),
        ("REG010", "test/registered/jit/test_dsv3_fused_a_gemm.py"),
    }


def test_sglang_june_unknown_suite_of_a_disabled_registration_fails_too():
    assert ("REG010", "test/registered/jit/benchmark/bench_symm_mem_all_gather.py") in failures(run(SGLANG_JUN, SGLANG_CONFIG))


def test_sglang_august_stage_and_runner_config_keywords_are_accepted():
    report = run(SGLANG_AUG, SGLANG_CONFIG)
    assert not [f for f in report.findings if f.rule == "REG002" and "unknown keyword" in f.message]


def test_sglang_august_composed_cuda_suites():
    cuda = {k for k in SGLANG_AUG_TARGET if k[1] == "cuda"}
    assert {k for k in keys(run(SGLANG_AUG, SGLANG_CONFIG)) if k[1] == "cuda"} == cuda


def test_sglang_august_every_registration_agrees():
    assert keys(run(SGLANG_AUG, SGLANG_CONFIG)) == SGLANG_AUG_TARGET


def test_sglang_august_package_files_are_not_tests():
    """sglang's runner skips __init__.py and conftest.py under test/registered (paths.test_excludes)."""
    assert ("REG004", "test/registered/attention/unittests/dense/__init__.py") not in failures(run(SGLANG_AUG, SGLANG_CONFIG))
