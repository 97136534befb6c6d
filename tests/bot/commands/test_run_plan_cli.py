"""`ci-registrar run-plan SUITE`: what `/run-rocm SUITE` would dispatch from a checkout, printed by
the App's own code, on checkouts of the vendored revisions of both targets."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import FIXTURES, REPO
from tests.conftest import CLI
from tests.patience import PATIENCE

TARGETS = FIXTURES / "targets"
SGLANG = TARGETS / "sglang" / "ci-382343f"
MILES = TARGETS / "miles" / "ci-31f1ca9"
CONSUMER = SGLANG / ".github" / "workflows" / "nightly-test-amd-miles-rocm720.yml"
ANY = 'dispatch:\n  "*":\n    workflow: rocm-on-demand.yml\n'


def _checkout(tmp_path: Path, source: Path, config: str) -> Path:
    """A copy of the vendored tree with its configuration, in a git repository (as a checkout is)."""
    repo = tmp_path / source.name
    shutil.copytree(source, repo)
    (repo / ".github" / "ci-registrar.yml").write_text(config)
    (repo / ".git").mkdir()
    return repo


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, "run-plan", *args], capture_output=True, text=True, timeout=PATIENCE, cwd=cwd)


@pytest.fixture()
def sglang(tmp_path):
    return _checkout(tmp_path, SGLANG, (REPO / "docs" / "configs" / "sglang.yml").read_text() + ANY)


@pytest.fixture()
def miles(tmp_path):
    return _checkout(tmp_path, MILES, ANY)


def test_json_plan_of_an_sglang_suite(sglang):
    done = _run("stage-c-test-large-8-gpu-amd-mi35x", "--repo", str(sglang), "--format", "json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert {"suite", "runs_on", "image", "shards", "timeout_per_file_s", "job_timeout_min", "command", "files", "gpus",
            "gpu_hours", "source"} <= set(plan)
    assert plan["runs_on"] == ["linux-mi35x-gpu-8"] and plan["shards"] == 3 and plan["gpus"] == 8
    assert (plan["timeout_per_file_s"], plan["job_timeout_min"]) == (3600, 60)
    assert plan["image"] == "rocm/sgl-dev:{version}-rocm724-mi35x-{date}"
    assert plan["command"] == ("python3 run_suite.py --hw amd --suite stage-c-test-large-8-gpu-amd-mi35x --continue-on-error "
                               "--timeout-per-file 3600 --auto-partition-id <i> --auto-partition-size 3")
    assert plan["source"] == {"workflow": ".github/workflows/pr-test-amd-rocm720.yml",
                              "job": "stage-c-test-large-8-gpu-amd-mi35x-rocm720", "line": 1147}
    # the enabled files of the suite at this revision (test_deepseek_v32_mtp.py is disabled there)
    assert plan["files"] == sorted([
        "test/registered/amd/perf/mi35x/test_qwen35_fp8_ar_fusion_mi35x.py", "test/registered/amd/test_deepseek_r1_mxfp4_8gpu.py",
        "test/registered/amd/test_kimi_k25_mxfp4.py", "test/registered/amd/test_kimi_k25_mxfp4_bcg_mi35x.py",
        "test/registered/amd/test_qwen3_coder_next_8gpu.py", "test/registered/cuda_graph/breakable/test_breakable_cuda_graph.py"])
    assert plan["gpu_hours"] > 0


def test_the_repository_is_found_from_inside_it_as_check_finds_it(sglang):
    inside = sglang / "test" / "registered"
    done = _run("nightly-amd-1-gpu-mi35x", cwd=inside)
    assert done.returncode == 0, done.stderr
    assert "runs on `linux-mi35x-gpu-1` (1 GPU), 1 shard" in done.stdout
    assert "per-file timeout 900 s, job timeout 90 min" in done.stdout
    assert "test/registered/unit/batch_invariant_ops/test_batch_invariant_ops.py" in done.stdout


def test_listed_files(sglang):
    files = ["test/registered/amd/test_kimi_k25_mxfp4.py", "test/registered/amd/test_qwen3_coder_next_8gpu.py"]
    done = _run("stage-c-test-large-8-gpu-amd-mi35x", "--repo", str(sglang), "--files", files[0], files[1],
                "--format", "json")
    plan = json.loads(done.stdout)
    assert plan["files"] == files and plan["shards"] == 1  # sglang's runner has no option to select files


def test_miles_8_gpu_nightly_exits_2_naming_the_largest_runner(miles):
    done = _run("nightly-stage-c-8-gpu-mi350", "--repo", str(miles), "--consumers-from", str(CONSUMER))
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("ci-registrar run-plan: no runner of this repository's fleet fits `nightly-stage-c-8-gpu-mi350`")
    assert "the largest runner the fleet has is [self-hosted, amd, mi350, 4gpu] (4 GPUs)" in line


def test_miles_nightly_plan_is_the_consumers_selection(miles):
    config = ANY + "  nightly-stage-c-2-gpu-mi350:\n    workflow: rocm-on-demand.yml\n    larger_runner: true\n"
    (miles / ".github" / "ci-registrar.yml").write_text(config)
    done = _run("nightly-stage-c-2-gpu-mi350", "--repo", str(miles), "--consumers-from", str(CONSUMER), "--format", "json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    # the nightly's --cadence nightly leaves out `long` tests: 3 files, 1,320 s (not 6 and 17,020 s)
    assert plan["files"] == ["tests/e2e/fsdp/test_qwen3_0.6B_megatron_fsdp_align.py",
                             "tests/e2e/sglang/test_session_server_multi_role/test_qwen3.py",
                             "tests/fast-gpu/test_run_megatron_worker_main.py"]
    assert "--match-all-labels" not in plan["command"] and "--cadence nightly" in plan["command"]
    assert plan["image"] == "rocm/sgl-dev:miles-rocm720-mi35x-{date}" and plan["image_days"] == 7
    # each file charged what the runner lets it run, max(1800, 1.25 x est_time): 3 x 1,800 s on 4 GPUs
    assert plan["gpu_hours"] == pytest.approx(6.0)
    assert plan["source"]["workflow"] == "sgl-project/sglang:.github/workflows/nightly-test-amd-miles-rocm720.yml"


def test_a_refused_command_is_one_line_and_exit_2(miles, tmp_path):
    done = _run("stage-c-4-gpu-h200", "--repo", str(miles))
    assert done.returncode == 2 and "is a cuda suite, not a ROCm one" in done.stderr
    (miles / ".github" / "ci-registrar.yml").write_text("dispatch: {}\n")
    done = _run("stage-c-4-gpu-mi350", "--repo", str(miles))
    assert done.returncode == 2 and "maps no workflow to it" in done.stderr
    bad = tmp_path / "bad.yml"
    bad.write_text("dispatch:\n  s:\n    shards: 0\n")
    done = _run("s", "--repo", str(miles), "--config", str(bad))
    assert done.returncode == 2 and "is invalid: line" in done.stderr and len(done.stderr.splitlines()) == 1
