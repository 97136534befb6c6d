"""The PR check's output on the simulator is the engine's, whatever the App does to make it cheap
(the analysis server, bulk hand-over, the registration index, the JSON tree listing): the check
run's conclusion, title, summary and annotations, for the seed PR checked cold and then warm,
equal the in-process engine's rendering of the same two commits."""

from __future__ import annotations

import pytest

from bench.api_calls import ApiWorld
from checks.engine import check_tree
from checks.reporting import render
from checks.scanning.tree import MemoryTree
from tests.fixtures.miles import CONSUMERS
from tests.fixtures.miles_shape import seed_pr


@pytest.fixture
def api_world(tmp_path):
    w = ApiWorld(tmp_path, files=700, tests=360)
    yield w
    w.stop()


def engine_output(w: ApiWorld, base_sha: str, head_sha: str) -> dict:
    """The source answer: checks.engine on the same commits, in this process, rendered as the App renders."""
    head, base = w.repo.files(head_sha), w.repo.files(base_sha)
    changed = {p: p for p in set(head) | set(base) if head.get(p) != base.get(p)}
    changed.update({p: None for p in head if p not in base})
    changed = {p: b for p, b in changed.items() if p in head or b}
    report = check_tree(MemoryTree(head), MemoryTree(base), changed, config_text=None, consumers_from=CONSUMERS)
    return {"conclusion": render.check_run_conclusion(report), "title": render.check_run_title(report),
            "summary": render.check_run_summary(report), "annotations": _sorted(render.check_run_annotations(report))}


def app_output(w: ApiWorld, sha: str) -> dict:
    run = w.latest_run(sha)
    return {"conclusion": run["conclusion"], "title": run["output"]["title"], "summary": run["output"]["summary"],
            "annotations": _sorted(run["annotations"])}


def _sorted(annotations: list[dict]) -> list[dict]:
    keep = ("path", "start_line", "end_line", "annotation_level", "title", "message")
    return sorted(({k: a.get(k) for k in keep} for a in annotations), key=lambda a: tuple(str(a[k]) for k in keep))


def test_the_seed_prs_check_run_is_the_engines_output_cold_and_warm(api_world):
    w = api_world
    for label, offset in (("cold", 0), ("warm", 100)):
        pr = w.open_pr(seed_pr(w.files, offset=offset, tag=label), label)
        w.event("pull_request", "opened", pull=pr, sender="bob")
        expected = engine_output(w, w.repo.head("main"), pr.head_sha)
        assert app_output(w, pr.head_sha) == expected, label
        assert expected["annotations"] and "nightly" in expected["summary"]  # the case says something
