"""Webhook payloads: one decoder for the intake and the worker, and the fields each handler uses.

`decode` is what both sides run on the raw body: the intake refuses (400) what it cannot decode,
so the worker never meets a body it cannot read. `validate` checks, before any work starts, the
fields a delivery's handler reads (msgspec structs), with their sizes bounded to what the store
holds: a payload that fails is recorded as `invalid` with the reason and never retried.

Anything not listed here (fields no handler reads) is not looked at.
"""

from __future__ import annotations

from typing import Annotated, Optional

import msgspec
from msgspec import Meta


class PayloadError(ValueError):
    """A delivery this App cannot use: refused at intake, or recorded `invalid` by the worker."""


# -- bounded scalars (the store's columns: String(64) action, BigInteger ids, String(200) names) --
_INT64_MAX = 2**63 - 1
Id = Annotated[int, Meta(ge=1, le=_INT64_MAX)]
Number = Annotated[int, Meta(ge=1, le=2**31 - 1)]
Action = Annotated[str, Meta(min_length=1, max_length=64, pattern=r"^[a-z_]+$")]
# GitHub: owner up to 39 characters, repository up to 100, letters digits - _ .
FullName = Annotated[str, Meta(min_length=3, max_length=200, pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")]
Sha = Annotated[str, Meta(pattern=r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")]
# Free text a handler passes on (names, refs, paths): no NUL (PostgreSQL refuses it), bounded.
Text = Annotated[str, Meta(max_length=1024, pattern=r"^[^\x00]*$")]
Login = Annotated[str, Meta(max_length=200, pattern=r"^[^\x00]*$")]


class _S(msgspec.Struct, kw_only=True):
    """Unknown fields are ignored: only what a handler reads is checked."""


class Installation(_S, kw_only=True):
    id: Id


class Repository(_S, kw_only=True):
    full_name: FullName
    default_branch: Optional[Text] = None


class Envelope(_S, kw_only=True):
    """What every delivery's job reads to record it: action, installation id, repository."""

    action: Optional[Action] = None
    installation: Optional[Installation] = None
    repository: Optional[Repository] = None


# -- per handler -------------------------------------------------------------------------------
class _Ref(_S, kw_only=True):
    sha: Sha


class _PullRequest(_S, kw_only=True):
    number: Number
    state: Optional[Text] = None
    head: _Ref
    base: _Ref


class PullRequestEvent(Envelope, kw_only=True):
    installation: Installation
    repository: Repository
    pull_request: _PullRequest


class _LinkedPull(_S, kw_only=True):
    number: Number
    base: Optional[_Ref] = None


class _App(_S, kw_only=True):
    """The App a check run or suite belongs to. GitHub sends it on every check_run event (its
    description requires `app`); a check run with buttons is always an App's, so no `null` either."""
    id: Id


class _CheckRun(_S, kw_only=True):
    name: Text
    head_sha: Sha
    app: _App
    pull_requests: list[_LinkedPull]  # required by GitHub's description: [] when no PR of this repository


class CheckRunEvent(Envelope, kw_only=True):
    installation: Installation
    repository: Repository
    check_run: _CheckRun


class _CheckSuite(_S, kw_only=True):
    head_sha: Sha
    pull_requests: list[_LinkedPull]  # required by GitHub's description


class CheckSuiteEvent(Envelope, kw_only=True):
    installation: Installation
    repository: Repository
    check_suite: _CheckSuite


class _WorkflowRun(_S, kw_only=True):
    id: Id
    path: Optional[Text] = None
    head_sha: Optional[Sha] = None


class WorkflowRunEvent(Envelope, kw_only=True):
    installation: Installation
    repository: Repository
    workflow_run: _WorkflowRun


class _Account(_S, kw_only=True):
    login: Optional[Login] = None
    slug: Optional[Login] = None


class _InstallationFull(_S, kw_only=True):
    id: Id
    account: Optional[_Account] = None
    target_type: Optional[Annotated[str, Meta(max_length=32, pattern=r"^[^\x00]*$")]] = None
    repository_selection: Optional[Annotated[str, Meta(max_length=16, pattern=r"^[^\x00]*$")]] = None


class _RepoName(_S, kw_only=True):
    full_name: FullName


class InstallationEvent(Envelope, kw_only=True):
    installation: _InstallationFull
    repositories: Optional[list[_RepoName]] = None


class InstallationRepositoriesEvent(Envelope, kw_only=True):
    installation: _InstallationFull
    repositories_added: list[_RepoName] = []
    repositories_removed: list[_RepoName] = []


class _User(_S, kw_only=True):
    login: Login
    type: Optional[Annotated[str, Meta(max_length=32, pattern=r"^[^\x00]*$")]] = None


class _Comment(_S, kw_only=True):
    id: Id
    body: Optional[Annotated[str, Meta(max_length=65536)]] = None  # GitHub's limit for a comment
    user: _User


class _Issue(_S, kw_only=True):
    number: Number
    state: Optional[Text] = None


class IssueCommentEvent(Envelope, kw_only=True):
    """The comment commands (/run-rocm ...): who wrote what, on which PR."""
    installation: Installation
    repository: Repository
    comment: _Comment
    issue: _Issue
    sender: _User


class _RequestedAction(_S, kw_only=True):
    identifier: Annotated[str, Meta(max_length=20)]


class _Output(_S, kw_only=True):
    summary: Optional[Annotated[str, Meta(max_length=65535)]] = None  # GitHub's limit for a summary


class _ClickedCheckRun(_S, kw_only=True):
    """The check run a button was clicked on: every field the button handlers read."""
    id: Id
    name: Text
    head_sha: Sha
    app: _App
    pull_requests: list[_LinkedPull]
    output: Optional[_Output] = None
    completed_at: Optional[Annotated[str, Meta(max_length=64, pattern=r"^[0-9T:.+Z-]+$")]] = None


class CheckRunActionEvent(Envelope, kw_only=True):
    """A click on a check run's button: the on-demand request's Approve run, the summary's Run
    ROCm suite N. The handlers read the click through this struct only (`checked`)."""
    installation: Installation
    repository: Repository
    check_run: _ClickedCheckRun
    requested_action: _RequestedAction
    sender: _User


# (event, action) -> struct; (event, None) for every action of that event. Another handler module
# adds its own with `register`. Events not listed are checked against the Envelope only.
SCHEMAS: dict[tuple[str, str | None], type] = {
    ("pull_request", None): PullRequestEvent,
    ("check_run", "rerequested"): CheckRunEvent,
    ("check_run", "requested_action"): CheckRunActionEvent,
    ("check_suite", "rerequested"): CheckSuiteEvent,
    ("issue_comment", "created"): IssueCommentEvent,
    ("workflow_run", None): WorkflowRunEvent,
    ("installation", None): InstallationEvent,
    ("installation_repositories", None): InstallationRepositoriesEvent,
}


def register(event: str, action: str | None, schema: type) -> None:
    SCHEMAS[(event, action)] = schema


# -- the decoder ---------------------------------------------------------------------------------
_decoder = msgspec.json.Decoder()


def decode(body: bytes) -> dict:
    """The body as a JSON object, or PayloadError. Intake and worker both call exactly this.

    Refused: invalid JSON or UTF-8 (msgspec checks every string), integers beyond what msgspec
    holds (json.loads would stop at 4,300 digits), nesting beyond the interpreter's recursion limit,
    and any top level other than an object.
    """
    try:
        data = _decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise PayloadError(f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise PayloadError("body is nested too deeply") from None
    if not isinstance(data, dict):
        raise PayloadError("body is not a JSON object")
    return data


def envelope(data: dict) -> Envelope:
    try:
        return msgspec.convert(data, Envelope)
    except msgspec.ValidationError as exc:
        raise PayloadError(str(exc)) from None


def checked(schema: type, data: dict):
    """`data` read through `schema`: what a handler reads is exactly what the intake checked (the
    same struct, SCHEMAS), never a field of the raw dict it did not look at."""
    try:
        return msgspec.convert(data, schema)
    except msgspec.ValidationError as exc:
        raise PayloadError(str(exc)[:300]) from None


def validate(event: str, data: dict) -> Envelope:
    """The envelope of a payload whose handler's fields are all present and in bounds; else PayloadError."""
    action = data.get("action")
    schema = SCHEMAS.get((event, action if isinstance(action, str) else None)) or SCHEMAS.get((event, None)) or Envelope
    try:
        return msgspec.convert(data, schema)
    except msgspec.ValidationError as exc:
        raise PayloadError(str(exc)[:300]) from None
    except RecursionError:
        raise PayloadError("payload is nested too deeply") from None

