"""A branch at one commit, and what else a step needs before it can decide, in one GraphQL request.

A `/run-rocm` needs, before it can read anything of the pull request: the trusted configuration
(the default branch's `.github/ci-registrar.yml`) with the commit it was read at (the plan copies
that commit's CI), the comment as it is now (a deleted or edited command acts on nothing), the
default branch's workflows and contract, the head's contract, and the external consumers'
workflows. Asked one by one, that was six requests and two listings; GitHub's GraphQL API takes
them as aliases of one query (`read_branch`), one point of the GraphQL budget whatever their number.

What the configuration names (its paths, its consumers) is known only once it has been read, so
the caller names what it expects (bot.ondemand.pull.ReadAhead: what the repository's configuration
named last in this process, else the defaults). A wrong guess costs a read later, never a wrong
answer: the caller decides from the configuration it parsed, and reads what the guess missed.

Every value travels as a GraphQL variable, never spliced into the query text. A part GitHub
cannot answer (a comment deleted, a consumer's repository this installation cannot read) comes
back as null with a field error, beside the rest: such errors are the answer "not there", not a
failure of the request (PyGithub's graphql_query raises on any error, so the request is sent
through its requester here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from github import GithubException, UnknownObjectException

from bot.github.retry import GitHubError

SYMLINK_MODE = 0o120000
_ELSEWHERE = re.compile(r"x\d+")  # the aliases of other repositories' files
_BLOB = "... on Blob { oid isBinary isTruncated text }"


@dataclass
class BranchRead:
    """What one read_branch request found. `commit` None: no such repository or branch for this
    installation (then nothing else of that repository was found either)."""

    commit: str | None = None
    files: dict[str, bytes | None] = field(default_factory=dict)  # at `commit`; None: absent or not a file
    # at `commit`: directory ("" the root) -> {path: (blob sha, mode)} of its files (one level); None: no such directory
    directories: dict[str, dict[str, tuple[str, int]] | None] = field(default_factory=dict)
    at: dict[str, bytes | None] = field(default_factory=dict)  # "<sha>:<path>" -> bytes, None: not read whole
    comment: str | None = None  # the comment's body now; None: gone, or not asked
    # "owner/repo:path" at its default branch: bytes, None (nothing readable there) or why GitHub refused it
    elsewhere: dict[str, bytes | str | None] = field(default_factory=dict)


def read_branch(client, repo: str, branch: str | None, *, files=(), directories=(), listings=(), at=(),
                comment: str | None = None, elsewhere=()) -> BranchRead:
    """One GraphQL request: `files`, `directories` (their files' texts too) and `listings` (names
    only; "" is the root) of `branch` (None: the default branch) at the commit it points to now,
    the blobs `at` other commits ("<sha>:<path>"), the issue comment whose node ID is `comment`,
    and `elsewhere` ("owner/repo:path", each at its repository's default branch).

    Texts that came whole land in the blob cache (a directory's entries too, so their reads later
    cost nothing). A file that did not come whole (binary, cut) is read from its blob, as
    InstallationClient.branch_file does; an entry of a directory or an `at` blob that did not come
    whole is left to the caller's later reads (no eager read of what may never be needed). A
    symbolic link among `files` or `elsewhere` is read as the contents API reads it: the file it
    leads to. After the request, `branch_head(repo, branch)` answers the commit read, once.
    """
    files, directories, listings = list(files), list(directories), list(listings)
    at, elsewhere = list(at), list(elsewhere)
    owner, _, name = repo.partition("/")
    variables: dict[str, str] = {"owner": owner, "name": name}
    declared = ["$owner: String!", "$name: String!"]

    def var(value: str, kind: str = "String!") -> str:
        key = f"v{len(variables) - 2}"
        variables[key] = value
        declared.append(f"${key}: {kind}")
        return key

    parts = []
    for i, path in enumerate(files):
        parts.append(f" f{i}: file(path: ${var(path)}) {{ mode object {{ {_BLOB} }} }}")
    for i, (path, texts) in enumerate([(d, True) for d in directories] + [(d, False) for d in listings]):
        entries = f"entries {{ path mode type oid{f' object {{ {_BLOB} }}' if texts else ''} }}"
        if path.strip("/"):
            parts.append(f" d{i}: file(path: ${var(path.strip('/'))}) {{ object {{ ... on Tree {{ {entries} }} }} }}")
        else:
            parts.append(f" d{i}: tree {{ {entries} }}")  # the root: Commit.file has no empty path
    target = f"target {{ oid ... on Commit {{{''.join(parts)} }} }}"
    if branch is None:
        ref = f" ref: defaultBranchRef {{ name {target} }}"
    else:
        ref = f" ref: ref(qualifiedName: ${var(f'refs/heads/{branch}')}) {{ name {target} }}"
    blobs = "".join(f" a{i}: object(expression: ${var(expression)}) {{ {_BLOB} }}" for i, expression in enumerate(at))
    query = f" repository(owner: $owner, name: $name) {{{ref}{blobs} }}"
    if comment is not None:
        query += f" comment: node(id: ${var(comment, 'ID!')}) {{ ... on IssueComment {{ body }} }}"
    for i, label in enumerate(elsewhere):
        other, _, path = label.partition(":")
        other_owner, _, other_name = other.partition("/")
        query += (f" x{i}: repository(owner: ${var(other_owner)}, name: ${var(other_name)}) {{"
                  f" defaultBranchRef {{ target {{ ... on Commit {{ file(path: ${var(path)}) {{ mode object {{ {_BLOB} }} }} }} }} }} }}")
    text = "query(" + ", ".join(declared) + ") {" + query + " }"
    data, refused = _partial(client, text, variables)

    out = BranchRead()
    found = data.get("repository") or {}
    ref_data = found.get("ref") or {}
    commit = ref_data.get("target") or {}
    if commit.get("oid"):
        out.commit = commit["oid"]
        client._branch_seen[(repo, branch)] = out.commit
        if ref_data.get("name"):
            client._branch_seen[(repo, ref_data["name"])] = out.commit
        for i, path in enumerate(files):
            out.files[path] = _file_bytes(client, repo, path, out.commit, commit.get(f"f{i}"))
        for i, path in enumerate(directories + listings):
            found_dir = commit.get(f"d{i}") or {}
            out.directories[path.strip("/")] = _entries(client, found_dir if not path.strip("/") else found_dir.get("object"))
    for i, expression in enumerate(at):
        out.at[expression] = _whole(client, found.get(f"a{i}"))
    if comment is not None:
        out.comment = (data.get("comment") or {}).get("body")
    for i, label in enumerate(elsewhere):
        other, _, path = label.partition(":")
        if f"x{i}" in refused:  # as external_consumers says a refusal: a warning of the check, not its failure
            out.elsewhere[label] = f"GitHub answered {refused[f'x{i}']} reading it at the default branch of {other}"
            continue
        entry = ((((data.get(f"x{i}") or {}).get("defaultBranchRef") or {}).get("target") or {}).get("file"))
        out.elsewhere[label] = _file_bytes(client, other, path, None, entry)
    return out


def _partial(client, query: str, variables: dict) -> tuple[dict, dict[str, str]]:
    """The request's `data`, with whatever parts resolved, and the other repositories' aliases
    (`x0`...) GitHub refused, with the error's type. A request that resolved nothing, or any other
    refusal, is raised as GitHub's error (as PyGithub's graphql_query does), under the client's
    retry policy."""
    requester = client.gh.requester

    def send():
        headers, body = requester.requestJsonAndCheck("POST", requester.graphql_url,
                                                      input={"query": query, "variables": variables})
        errors = body.get("errors") or []
        if body.get("data") is None and len(errors) == 1 and errors[0].get("type") == "NOT_FOUND":
            raise UnknownObjectException(404, body, headers, errors[0].get("message"))
        refused = {}
        for error in errors:
            if error.get("type") == "NOT_FOUND":
                continue  # that part is not there
            where = str((error.get("path") or [""])[0])
            if body.get("data") is None or not _ELSEWHERE.fullmatch(where):
                # refused (FORBIDDEN: no contents permission), rate limited, or a query GitHub
                # rejects: never read as "the file is not there"
                raise GithubException(400, body, headers)
            refused[where] = str(error.get("type") or "an error")
        return body["data"], refused

    try:
        return client.call("POST", "/graphql", send, idempotent=True)  # a read: safe to send again
    except GitHubError as exc:
        if exc.status == 404:
            return {}, {}  # a repository this installation cannot read: nothing found
        raise


def _file_bytes(client, repo: str, path: str, commit: str | None, entry: dict | None) -> bytes | None:
    """A Commit.file entry's bytes (None: nothing there, a directory or a submodule)."""
    if not entry:
        return None
    if entry.get("mode") == SYMLINK_MODE:  # the contents API reads the file a link leads to
        return client.file_at(repo, path, commit)
    blob = entry.get("object") or {}
    if not blob.get("oid") or "isTruncated" not in blob:
        return None
    return client._blob_bytes(repo, blob)


def _whole(client, blob: dict | None) -> bytes | None:
    """A blob's text when GitHub gave it whole and exact (then cached), else None: no REST read."""
    if not blob or not blob.get("oid") or "isTruncated" not in blob:
        return None
    return client._exact_text(blob)


def _entries(client, tree: dict | None) -> dict[str, tuple[str, int]] | None:
    if not tree or "entries" not in tree:
        return None  # nothing at that path, or a file
    out = {}
    for entry in tree.get("entries") or ():
        if entry.get("type") != "blob" or not entry.get("path"):
            continue  # a subdirectory or a submodule: not one of this directory's files
        out[entry["path"]] = (entry["oid"], entry["mode"])
        _whole(client, entry.get("object"))  # a link's blob too: the path it leads to
    return out
