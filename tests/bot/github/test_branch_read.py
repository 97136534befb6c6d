"""bot/github/branch_read.py: a branch at one commit, a comment, other commits' blobs and other
repositories' files in one GraphQL request, against the simulator (which validates the query
against GitHub's schema)."""

from __future__ import annotations

import pytest

from bot.github.client import GitHub, git_blob_sha
from bot.github.retry import GitHubError, RetryPolicy
from tests.patience import PATIENCE
from tests.simulator.fixtures import github_sim  # noqa: F401

WORKFLOW = b"name: nightly\non: push\n"


@pytest.fixture()
def world(github_sim, tmp_path):
    sim = github_sim
    app = sim.create_app()
    repo = sim.create_repo("radixark/miles")
    main = repo.commit({"cfg.yml": b"a: 1\n", ".github/workflows/nightly.yml": WORKFLOW,
                        ".github/workflows/link.yml": b"nightly.yml", ".github/workflows/README.md": b"x\n",
                        ".github/workflows/sub/deep.yml": b"name: deep\n", "tests/ci/run_suite.py": b"SUITES = {}\n"},
                       branch="main", modes={".github/workflows/link.yml": "120000"})
    head = repo.commit({"tests/ci/run_suite.py": b"SUITES = {'a': []}\n"}, parent=main, branch="feature")
    sglang = sim.create_repo("sgl-project/sglang")
    sglang.commit({".github/workflows/amd.yml": b"name: amd\n"}, branch="main")
    sim.create_repo("radixark/private").commit({"x.yml": b"x: 1\n"}, branch="main")
    inst = sim.install(app, repo, sglang)
    pr = sim.open_pull_request(repo, "feature")
    github = GitHub(sim.url, str(app.id), app.private_key_pem,
                    policy=RetryPolicy(base_s=0.01, read_timeout_s=PATIENCE), blob_dir=tmp_path / "blobs")
    client = github.for_installation(inst.id)
    return sim, client, repo, main, head, pr


def _calls(sim):
    return [r["operation"] for r in sim.requests_log if not r["operation"].startswith("apps/")]


def test_everything_a_command_reads_first_comes_in_one_request(world):
    sim, client, repo, main, head, pr = world
    comment = sim.add_comment(repo, pr.number, "/run-rocm x", author="maint")
    read = client.read_branch("radixark/miles", None, files=["cfg.yml", "tests/ci/run_suite.py", "nope.yml"],
                              directories=[".github/workflows", "no/such/dir"],
                              at=[f"{head}:tests/ci/run_suite.py", f"{head}:nope.py"], comment=comment["node_id"],
                              elsewhere=["sgl-project/sglang:.github/workflows/amd.yml",
                                         "sgl-project/sglang:.github/workflows/none.yml", "radixark/private:x.yml"])
    assert _calls(sim) == ["graphql"]
    assert read.commit == main  # and by the branch's name: branch_head(repo, "main") below
    assert read.files == {"cfg.yml": b"a: 1\n", "tests/ci/run_suite.py": b"SUITES = {}\n", "nope.yml": None}
    # one level, files only (the subdirectory is not one of its files), with their modes
    assert read.directories == {
        ".github/workflows": {".github/workflows/README.md": (git_blob_sha(b"x\n"), 0o100644),
                              ".github/workflows/link.yml": (git_blob_sha(b"nightly.yml"), 0o120000),
                              ".github/workflows/nightly.yml": (git_blob_sha(WORKFLOW), 0o100644)},
        "no/such/dir": None}
    assert client.github.blobs.get(git_blob_sha(WORKFLOW)) == WORKFLOW  # its later read costs nothing
    assert read.at == {f"{head}:tests/ci/run_suite.py": b"SUITES = {'a': []}\n", f"{head}:nope.py": None}
    assert read.comment == "/run-rocm x"
    assert read.elsewhere == {"sgl-project/sglang:.github/workflows/amd.yml": b"name: amd\n",
                              "sgl-project/sglang:.github/workflows/none.yml": None, "radixark/private:x.yml": None}
    assert client.branch_head("radixark/miles", "main") == main  # the commit read, without a ref request
    assert _calls(sim) == ["graphql"]


def test_a_deleted_or_edited_comment_reads_as_it_is_now(world):
    sim, client, repo, main, head, pr = world
    comment = sim.add_comment(repo, pr.number, "/run-rocm x", author="maint")
    sim.edit_comment(repo, comment["id"], "/run-rocm y")
    assert client.read_branch("radixark/miles", "main", comment=comment["node_id"]).comment == "/run-rocm y"
    sim.delete_comment(repo, comment["id"])
    gone = client.read_branch("radixark/miles", "main", files=["cfg.yml"], comment=comment["node_id"])
    assert gone.comment is None and gone.files == {"cfg.yml": b"a: 1\n"}  # the rest still read


def test_a_link_reads_as_the_file_it_leads_to_and_a_cut_text_from_its_blob(world):
    sim, client, repo, main, head, pr = world
    sim.graphql.text_limit = 8
    read = client.read_branch("radixark/miles", None, files=[".github/workflows/link.yml", "tests/ci/run_suite.py"],
                              directories=[".github/workflows"], at=[f"{head}:tests/ci/run_suite.py"])
    assert read.files == {".github/workflows/link.yml": WORKFLOW, "tests/ci/run_suite.py": b"SUITES = {}\n"}
    # what a directory or another commit gave cut is left for a later read: nothing cached, no blob read
    assert read.at == {f"{head}:tests/ci/run_suite.py": None}
    assert client.github.blobs.get(git_blob_sha(WORKFLOW)) is None
    assert _calls(sim) == ["graphql", "repos/get-content", "git/get-blob"]


def test_no_branch_or_repository_reads_as_nothing_found_and_a_refusal_is_raised(world):
    sim, client, repo, main, head, pr = world
    assert client.read_branch("radixark/miles", "no-such-branch", files=["cfg.yml"]).commit is None
    assert client.read_branch("radixark/private", None, files=["cfg.yml"]).files == {}
    # an installation that may not read contents: refused, never "the file is not there"
    reader = sim.create_app(name="No contents", permissions={"metadata": "read"})
    inst = sim.install(reader, repo)
    weak = GitHub(sim.url, str(reader.id), reader.private_key_pem,
                  policy=RetryPolicy(base_s=0.01, read_timeout_s=PATIENCE)).for_installation(inst.id)
    with pytest.raises(GitHubError):
        weak.read_branch("radixark/miles", None, files=["cfg.yml"])


def test_a_tree_from_a_read_knows_its_listed_directories_and_asks_only_for_the_rest(world):
    """bot.analysis.sources.GitHubTree.from_read: what the read listed and read costs nothing more;
    a path in a listed directory that it does not hold is absent without a request; any other path
    is read by name; a link in a listed directory leads to its file."""
    from bot.analysis.sources import GitHubTree

    sim, client, repo, main, head, pr = world
    read = client.read_branch("radixark/miles", None, files=["cfg.yml"], directories=[".github/workflows"], listings=[""])
    tree = GitHubTree.from_read(client, "radixark/miles", read)
    assert not tree.listed and tree.sha == main
    assert sorted(tree.paths()) == [".github/workflows/README.md", ".github/workflows/link.yml",
                                    ".github/workflows/nightly.yml", "cfg.yml"]  # the root's files too
    before = len(_calls(sim))
    assert tree.read("cfg.yml") == b"a: 1\n" and tree.read(".github/workflows/nightly.yml") == WORKFLOW
    assert tree.read(".github/workflows/link.yml") == WORKFLOW  # its target, read from the cache
    assert tree.read("amd_ci_start_container.sh") is None and tree.read(".github/workflows/gone.yml") is None
    tree.prefetch([".github/workflows/nightly.yml", "nope.sh"])
    assert _calls(sim)[before:] == []
    assert tree.read("tests/ci/run_suite.py") == b"SUITES = {}\n"  # outside what was listed: by name
    assert tree.read(".github/workflows/sub/deep.yml") == b"name: deep\n"
    assert _calls(sim)[before:] == ["graphql", "graphql"]


def test_a_refusal_of_another_repository_is_its_reason_and_any_other_refusal_is_raised():
    """GitHub answers a part it refuses with null and an error beside the rest: for another
    repository's file (an external consumer) that is why it could not be read, as
    external_consumers says it (a warning of the check); anywhere else it fails the request."""
    from types import SimpleNamespace

    from bot.github.branch_read import read_branch

    def client_answering(body):
        requester = SimpleNamespace(graphql_url="/graphql", requestJsonAndCheck=lambda *a, **k: ({}, body))
        return SimpleNamespace(gh=SimpleNamespace(requester=requester), call=lambda method, endpoint, fn, **kw: fn(),
                               _branch_seen={})

    commit = {"ref": {"name": "main", "target": {"oid": "c" * 40, "f0": None}}}
    body = {"data": {"repository": commit, "x0": None},
            "errors": [{"type": "FORBIDDEN", "path": ["x0"], "message": "SAML enforcement"}]}
    read = read_branch(client_answering(body), "radixark/miles", None, files=["cfg.yml"],
                       elsewhere=["sgl-project/sglang:.github/workflows/amd.yml"])
    assert read.commit == "c" * 40 and read.files == {"cfg.yml": None}
    assert read.elsewhere == {"sgl-project/sglang:.github/workflows/amd.yml":
                              "GitHub answered FORBIDDEN reading it at the default branch of sgl-project/sglang"}
    body["errors"] = [{"type": "FORBIDDEN", "path": ["repository", "ref"], "message": "no"}]
    with pytest.raises(Exception) as refused:
        read_branch(client_answering(body), "radixark/miles", None, files=["cfg.yml"])
    assert getattr(refused.value, "status", None) == 400
