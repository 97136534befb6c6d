"""checks/target/suites.py on its own: what a suite name says, and the corrections that must keep the hardware.

A did-you-mean or a one-click fix that moved a registration to other hardware (another GPU count,
an NVIDIA suite for a ROCm one) would be worse than none, so each rule of the hardware claim and
of the confident correction is pinned here (bench/mutation.py measures how much of the module these tests pin).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.model import Backend
from checks.target.suites import (
    SUGGESTION_COMPARISONS,
    HardwareIndex,
    NearNames,
    SuiteName,
    close_suites,
    confident_correction,
    edit_distance,
    is_nightly,
    parse_suite_name,
    within_edits,
)

INVENTORY = ["stage-a-cpu", "stage-b-1-gpu-h200", "stage-c-4-gpu-h200", "stage-c-8-gpu-h200", "stage-c-4-gpu-mi350",
             "stage-c-8-gpu-mi350", "nightly-stage-c-4-gpu-mi350", "nightly-stage-c-8-gpu-b200", "stage-b-1-gpu-small-amd",
             "stage-b-1-gpu-large-amd"]


# -- names ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, parsed", [
    ("stage-a-cpu", SuiteName("stage-a-cpu", False, "a", None, "cpu")),
    ("nightly-stage-z-cpu", SuiteName("nightly-stage-z-cpu", True, "z", None, "cpu")),
    ("stage-c-4-gpu-mi350", SuiteName("stage-c-4-gpu-mi350", False, "c", 4, "mi350")),
    ("nightly-stage-c-8-gpu-h200", SuiteName("nightly-stage-c-8-gpu-h200", True, "c", 8, "h200")),
    ("stage-b-16-gpu-b200", SuiteName("stage-b-16-gpu-b200", False, "b", 16, "b200")),
    ("stage-b-0-gpu-x", SuiteName("stage-b-0-gpu-x", False, "b", 0, "x")),
])
def test_a_suite_name_is_read(name, parsed):
    assert parse_suite_name(name) == parsed


@pytest.mark.parametrize("name", [
    "stage-ab-cpu", "stage-A-cpu", "stage--cpu", "stage-a-gpu", "stage-c-x-gpu-h200", "stage-c-4-gpu-", "stage-c-4-gpu-H200",
    "stage-c-4-npu-h200", "xstage-a-cpu", "stage-a-cpux", "stage-a-cpu-", "nightly-stage-a", "nightly--stage-a-cpu",
    "Nightly-stage-a-cpu", "stage-c-4-gpu-h200\n", "stage-c-4-gpu-h200-extra", "pr-test-amd", "", "stage-c--gpu-h200",
    "xnightly-stage-a-cpu",
])
def test_a_name_that_is_not_a_staged_suite(name):
    assert parse_suite_name(name) is None


@pytest.mark.parametrize("hardware, backend", [
    ("cpu", Backend.CPU), ("mi350", Backend.ROCM), ("mi3", Backend.ROCM), ("mi300x", Backend.ROCM),
    ("h200", Backend.CUDA), ("h20", Backend.CUDA), ("a100", Backend.CUDA), ("b200", Backend.CUDA), ("l40", Backend.CUDA),
    ("v100", Backend.CUDA), ("gb200", Backend.CUDA), ("gb3", Backend.CUDA),
    ("mi", None), ("amd", None), ("xpu", None), ("gb", None), ("h", None), ("t4", None), ("c100", None), ("cpux", None),
    ("ami350", None), ("xh200", None),
])
def test_the_backend_a_hardware_token_belongs_to(hardware, backend):
    assert SuiteName("s", False, "a", 1, hardware).backend_class == backend


def test_nightly():
    assert is_nightly("nightly-stage-a-cpu") and is_nightly("nightly-")
    assert not is_nightly("stage-a-cpu") and not is_nightly("nightly") and not is_nightly("xnightly-stage-a-cpu")


# -- distances --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("a, b, d", [("", "", 0), ("", "abc", 3), ("abc", "", 3), ("abc", "abc", 0), ("abc", "abd", 1),
                                     ("abc", "ab", 1), ("ab", "abc", 1), ("kitten", "sitting", 3), ("mi350", "mi35", 1),
                                     ("h200", "mi350", 4), ("abcd", "badc", 3), ("flaw", "lawn", 2)])
def test_edit_distance(a, b, d):
    assert edit_distance(a, b) == d
    assert edit_distance(b, a) == d


@pytest.mark.parametrize("a, b, k, expected", [
    ("abc", "abc", 0, 0), ("abc", "abd", 0, 1), ("abc", "abd", 1, 1), ("abc", "axy", 1, 2), ("abc", "axy", 2, 2),
    ("abc", "xyz", 2, 3), ("a", "abcd", 2, 3), ("abcd", "a", 2, 3), ("a", "abc", 2, 2), ("", "ab", 2, 2), ("", "abc", 2, 3),
    ("stage-c-4-gpu-mi350", "stage-c-8-gpu-mi350", 2, 1), ("stage-c-4-gpu-mi350", "stage-c-4-gpu-mi35", 2, 1),
    ("abcdef", "badcfe", 2, 3), ("ab", "ba", 2, 2), ("xabcdefgh", "abcdefghx", 2, 2), ("xxabcdefgh", "abcdefghxx", 3, 4),
])
def test_within_edits(a, b, k, expected):
    assert within_edits(a, b, k) == expected


@settings(max_examples=300, deadline=None)
@given(st.text("abc-", max_size=9), st.text("abc-", max_size=9), st.integers(0, 3))
def test_within_edits_is_the_distance_or_one_past_k(a, b, k):
    d = edit_distance(a, b)
    assert within_edits(a, b, k) == (d if d <= k else k + 1)


# -- corrections ------------------------------------------------------------------------------------------
def test_the_nightly_rename_is_a_confident_correction():
    assert confident_correction("nightly-stage-c-4-gpu-h200", INVENTORY) == "stage-c-4-gpu-h200"
    assert confident_correction("stage-c-8-gpu-b200", INVENTORY) == "nightly-stage-c-8-gpu-b200"
    # the rename wins over a nearer typo
    assert confident_correction("nightly-stage-c-4-gpu-h200", INVENTORY + ["nightly-stage-c-4-gpu-h20"]) == "stage-c-4-gpu-h200"


@pytest.mark.parametrize("name, expected", [
    ("stage-c-4-gpu-mi35", "stage-c-4-gpu-mi350"),  # one edit, the only one that near
    ("stage-a-cpuu", "stage-a-cpu"),
    ("stage-a-cp", "stage-a-cpu"),
    ("stage-b-1-gpu-h2000", "stage-b-1-gpu-h200"),
    ("stage-b-1-gpu-h2", "stage-b-1-gpu-h200"),  # two edits
    ("stage-b-1-gpu-h", None),  # three edits
    ("stage-c-6-gpu-h200", None),  # one edit from both 4 and 8: a guess
    ("stage-x-9-gpu-zzz", None),
])
def test_a_typo_is_corrected_only_when_one_candidate_is_nearest(name, expected):
    assert confident_correction(name, INVENTORY) == expected


def test_the_nightly_rename_needs_the_twin_in_the_inventory():
    # a nightly- name whose twin is not there, or 8 characters that only look like a prefix, are no rename
    assert confident_correction("nightly-stage-zzz", INVENTORY) is None
    assert confident_correction("xxxxxxxxstage-a-cpu", INVENTORY) is None
    refused = NearNames(budget=0)
    assert refused.correction("nightly-stage-zzz", INVENTORY, key=0) is None
    assert refused.correction("xxxxxxxxstage-a-cpu", INVENTORY, key=0) is None


def test_candidates_may_be_any_iterable():
    assert confident_correction("abc", (c for c in ["abd", "xyz"])) == "abd"
    assert confident_correction("stage-c-8-gpu-b200", iter(INVENTORY)) == "nightly-stage-c-8-gpu-b200"


@pytest.mark.parametrize("candidates, expected", [
    (["s-tage-c-4-gpu-h900", "s6tage-c-4-gpu-h2700", "sage-c-4-gpu-h2030", "seabe-c-4-gpu-hb00", "stagae-c-4-gpuhh200",
      "stage-c-4-gpu-h20", "stage-cg4-6u-5h200", "stage1-c--3u-h200", "taege-1c-4-gpu-h200"],
     ["stage-c-4-gpu-h20", "s-tage-c-4-gpu-h900", "s6tage-c-4-gpu-h2700"]),
    (["ctcg-c-4-gpu-h200", "gstage-c-4-gpu-hg00", "s8tfge-c-4-pu-h200", "sbage-c-4-gp-h200", "stag-c-4-gpu-h4200",
      "stage-c-4-gpu-h00", "stagea-c-4-gpu-00", "stagec-4-gpu-h201", "stge-c-4-gpu-0h200"],
     ["stage-c-4-gpu-h00", "gstage-c-4-gpu-hg00", "stag-c-4-gpu-h4200"]),
])
def test_close_suites_reorder_difflibs_six_best_by_edits(candidates, expected):
    # difflib's ratio picks six, the edit distance orders them: five or seven would pick others
    assert close_suites("stage-c-4-gpu-h200", candidates) == expected


def test_a_correction_needs_a_strictly_nearest_candidate():
    assert confident_correction("abc", ["abd", "abe"]) is None  # a tie at one edit
    assert confident_correction("abc", ["abd", "xbe"]) == "abd"  # one at one edit, one at two
    assert confident_correction("abc", ["abd"]) == "abd"
    assert confident_correction("abc", ["axy"]) == "axy"  # two edits still count
    assert confident_correction("abc", ["xyz"]) is None
    assert confident_correction("abc", []) is None
    assert confident_correction("abc", ["abc"]) == "abc"


def test_close_suites_are_nearest_first_and_bounded():
    near = close_suites("stage-c-4-gpu-h20", INVENTORY)
    assert near[0] == "stage-c-4-gpu-h200" and len(near) <= 3
    assert near == sorted(near, key=lambda c: (edit_distance("stage-c-4-gpu-h20", c), c))
    assert close_suites("stage-c-4-gpu-h20", INVENTORY, n=1) == ["stage-c-4-gpu-h200"]
    assert close_suites("zzzzzz", INVENTORY) == []
    many = [f"stage-c-{i}-gpu-h200" for i in range(1, 10)]
    assert len(close_suites("stage-c-0-gpu-h200", many)) == 3
    assert len(close_suites("stage-c-0-gpu-h200", many, n=5)) == 5
    assert len(close_suites("stage-c-0-gpu-h200", many, n=8)) == 8


# -- the bounded did-you-mean -----------------------------------------------------------------------------
def test_near_names_spend_their_budget_once_per_question():
    near = NearNames(budget=25)
    assert near.left == 25
    assert near.close("stage-c-4-gpu-h20", INVENTORY, key=1) == close_suites("stage-c-4-gpu-h20", INVENTORY)
    assert near.left == 25 - len(INVENTORY)
    near.close("stage-c-4-gpu-h20", INVENTORY, key=1)  # memoised: free
    assert near.left == 25 - len(INVENTORY) and near.refused == 0
    near.close("stage-c-4-gpu-h20", INVENTORY, key=2)  # another key is another question
    assert near.left == 25 - 2 * len(INVENTORY)
    assert near.close("stage-c-4-gpu-h20", INVENTORY, key=3) == []  # past the budget: no hint
    assert near.refused == 1 and near.left == 5
    near.close("stage-c-4-gpu-h20", INVENTORY, key=3)
    assert near.refused == 2  # every answer without its search is counted
    assert near.close("x", ["a", "b", "c", "d", "e"], key=4) == [] and near.left == 0  # exactly the budget left
    assert NearNames().left == SUGGESTION_COMPARISONS == 50_000


def test_a_refused_correction_keeps_the_nightly_rename():
    near = NearNames(budget=1)
    assert near.correction("nightly-stage-c-4-gpu-h200", INVENTORY, key=0) == "stage-c-4-gpu-h200"
    assert near.correction("stage-c-8-gpu-b200", INVENTORY, key=0) == "nightly-stage-c-8-gpu-b200"
    assert near.correction("stage-c-4-gpu-mi35", INVENTORY, key=0) is None  # a typo needs the search
    assert near.refused == 3
    roomy = NearNames()
    assert roomy.correction("stage-c-4-gpu-mi35", INVENTORY, key=0) == "stage-c-4-gpu-mi350"
    assert roomy.correction("stage-c-4-gpu-mi35", INVENTORY, key=0, keep=lambda n, c: set()) == "stage-c-4-gpu-mi350"  # memo
    assert roomy.correction("stage-c-4-gpu-mi35", INVENTORY, key=1, keep=lambda n, c: set()) is None
    assert roomy.refused == 0


def test_near_names_narrow_by_keep_before_the_search():
    index = HardwareIndex(INVENTORY)
    near = NearNames()
    assert near.close("stage-c-4-gpu-hh200", INVENTORY, key=0, keep=index.same_hardware) == ["stage-c-4-gpu-h200"]
    # h20 is a model of its own: no hint moves the registration to an h200 suite
    assert near.close("stage-c-4-gpu-h20", INVENTORY, key=0, keep=index.same_hardware) == []
    assert near.correction("stage-c-4-gpu-mi3500", INVENTORY, key=0, keep=index.same_hardware) == "stage-c-4-gpu-mi350"


# -- the hardware a name claims -----------------------------------------------------------------------------
def test_a_claim_reads_count_hardware_and_typos():
    index = HardwareIndex(INVENTORY)
    claim = index.claim("stage-c-4-gpu-mi350")
    assert claim.count == (4, "gpu") and claim.hardware == {"mi350"} and claim.typos == ()
    assert index.claim("stage-b-2-npus-910b").count == (2, "npu") and index.claim("stage-b-2-npus-910b").hardware == {"910b"}
    assert index.claim("stage-b-1-gpu-small-amd").hardware == {"small", "amd"}
    assert index.claim("stage-b-1-gpu-smal-amd").typos == ("smal",)
    assert index.claim("stage-c-4-gpu-mi35").typos == ("mi35",)  # no known model, in no inventory name: a typo
    assert index.claim("stage-c-4-gpu-mi35x").hardware == {"mi35x"}  # a known model
    assert index.claim("stage-c-4-gpu-hh200").typos == ("hh200",)
    assert index.claim("stage-c-4").count is None  # a number with no device after it
    assert index.claim("stage-c-4-gpu").count == (4, "gpu")
    assert index.claim("gpu-4").count is None and index.claim("gpu-4").typos == ()
    assert index.claim("stage-c-12-x").typos == ("x",)
    assert index.claim("stage-c-4-gpu-mi350") is index.claim("stage-c-4-gpu-mi350")  # memoised


def test_the_vocabulary_and_models_come_from_the_inventory():
    index = HardwareIndex(["stage-a-x9000-cpu", "stage-b-1-gpu-mi999"])
    assert "mi999" in index.models and "x9000" not in index.models and "h200" in index.models
    assert index.claim("stage-b-1-gpu-x9000").hardware == frozenset() and index.claim("stage-b-1-gpu-x9000").typos == ()


@pytest.mark.parametrize("token, model", [("mi350", True), ("mi350x", True), ("gb200", True), ("h200", True), ("t4", True),
                                          ("rtx4090", True), ("4090", True), ("a2", True), ("a3", True), ("a4", True),
                                          ("h20000", False), ("mi", False), ("gpu", False), ("x1", False), ("409", False),
                                          ("gb", False), ("rtx", False), ("a", False), ("mi350-", False),
                                          # not known models: the shape alone decides
                                          ("b999", True), ("h999", True), ("l99", True), ("v99", True), ("t99", True),
                                          ("a999", True), ("a9999x", True), ("a99999", False), ("gb999", True),
                                          ("mi999", True), ("rtx9999", True), ("1234x", True), ("12345", False),
                                          ("c100", False), ("xmi999", False), ("mi999-", False)])
def test_what_is_shaped_like_a_model(token, model):
    # an inventory word shaped like a model is a model of that inventory
    assert (token in HardwareIndex([f"stage-b-1-gpu-{token}"]).models) == model


@pytest.mark.parametrize("name, candidate, ok", [
    ("stage-c-4-gpu-mi350", "nightly-stage-c-4-gpu-mi350", True),
    ("stage-c-4-gpu-mi350", "stage-c-8-gpu-mi350", False),  # another GPU count
    ("stage-c-4-gpu-mi350", "stage-c-4-gpu-h200", False),  # other hardware
    ("stage-c-4-gpu-mi350", "stage-c-4-gpu", False),  # drops the hardware
    ("stage-c-4-gpu", "stage-c-4-gpu-h200", False),  # adds hardware with no typo to correct
    ("stage-c-4-gpu-hh200", "stage-c-4-gpu-h200", True),  # the misspelt token becomes the hardware
    ("stage-c-4-gpu-qqq200", "stage-c-4-gpu-h200", False),  # too far to be that token's typo
    ("stage-b-1-gpu-smal-amd", "stage-b-1-gpu-small-amd", True),
    ("stage-b-1-gpu-smal", "stage-b-1-gpu-small-amd", False),  # one typo cannot add two tokens
    ("stage-b-1-gpu-smal-aamd", "stage-b-1-gpu-small-amd", True),
    ("stage-b-1-gpu-sml-amd", "stage-b-1-gpu-small-amd", True),  # a typo two edits away still counts
    ("stage-b-1-gpu-sm-amd", "stage-b-1-gpu-small-amd", False),  # three is too far
    ("stage-a-cpu", "stage-a-cpu", True),
    ("stage-a-cpu", "stage-b-1-gpu-h200", False),
])
def test_a_correction_keeps_the_count_and_the_hardware(name, candidate, ok):
    index = HardwareIndex(INVENTORY)
    assert index.compatible(name, candidate) is ok


def test_same_hardware_filters_the_candidates():
    index = HardwareIndex(INVENTORY)
    assert index.same_hardware("stage-c-4-gpu-mi350", INVENTORY) == {"stage-c-4-gpu-mi350", "nightly-stage-c-4-gpu-mi350"}
    assert index.same_hardware("stage-c-8-gpu-h200", INVENTORY) == {"stage-c-8-gpu-h200"}
    assert index.same_hardware("stage-c-4-gpu-mi350", []) == set()
