"""The pull request as every on-demand stage sees it, and the steps each stage takes on it once.

A request is one row per comment (a unique key); its states change only by the events of
bot/store/ondemand_states.py, each one transaction that compare-and-sets the status and writes its
audit entry with it (`change`). Every reply or check run is guarded by a claimed step (`once`,
bot.store.ondemand.claim_step): a step whose GitHub call fails in a way worth retrying is
released so that the retried job takes it again.

What an event's use case has to post on the PR (reactions on the command's comment, replies) it
returns as an `Answer`; the event's handler posts it (`Answer.post`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from bot.github.retry import GitHubError, TransientError
from bot.ondemand import texts
from bot.ondemand.selection import Outcome, analyse_bounded
from bot.analysis.sources import GitHubTree, consumer_labels, keep_consumer, kept_consumer
from bot.store import ondemand as store
from checks.config.schema import CONFIG_PATH, Config, load_config
from checks.wording import visible

BUDGET_WINDOW = dt.timedelta(hours=24)
RETRYABLE = store.RETRYABLE  # not dispatched yet: approvable again


def iso_now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class ReadAhead:
    """What a command's first request reads beside the trusted configuration, before that
    configuration is known: the paths and external consumers the repository's configuration named
    the last time this process read it, else the defaults' (bot.github.branch_read). Only the
    default branch's configuration ever sets it; a wrong guess costs a read later, not a wrong answer."""

    contract: tuple[str, ...]
    workflows_dir: str
    consumers: tuple[str, ...]

    @classmethod
    def of(cls, config: Config) -> "ReadAhead":
        return cls(tuple(config.paths.contract_modules()), config.paths.workflows_dir.rstrip("/"),
                   tuple(consumer_labels(config)))

    @classmethod
    def remembered(cls, client, repo: str) -> "ReadAhead":
        return client.github.read_ahead.get((client.installation_id, repo)) or cls.of(Config())

    def remember(self, client, repo: str) -> None:
        client.github.read_ahead.put((client.installation_id, repo), self)


@dataclass
class Pull:
    """One pull request as every stage needs it: GitHub's answer now, the trusted configuration, the store."""

    job: object  # bot.worker.job.JobContext
    repo: str
    number: int
    data: dict  # GET pulls/{n}
    config: Config
    _analysis: Outcome | None = field(default=None, repr=False)
    _tree: object = field(default=None, repr=False)
    _default_tree: object = field(default=None, repr=False)
    _comment_read: tuple[int, str | None] | None = field(default=None, repr=False)  # (id, body now) by read_trusted

    @property
    def client(self):
        return self.job.client

    @property
    def store_url(self) -> str:
        return self.job.store_url

    @property
    def head_sha(self) -> str:
        return self.data["head"]["sha"]

    @property
    def open(self) -> bool:
        return self.data.get("state") == "open" and not self.data.get("merged")

    @property
    def tree(self):
        if self._tree is None:
            self._tree = GitHubTree(self.client, self.repo, self.head_sha)
        return self._tree

    @property
    def default_branch(self) -> str:
        return ((self.data.get("base") or {}).get("repo") or {}).get("default_branch") or "main"

    @property
    def default_tree(self):
        """The default branch now, at one commit: the CI an on-demand run copies (never the PR's)."""
        if self._default_tree is None:
            self._default_tree = GitHubTree(self.client, self.repo, self.client.branch_head(self.repo, self.default_branch))
        return self._default_tree

    def read_trusted(self, default_branch: str, comment: dict | None = None, *, ahead: bool = True) -> list[str]:
        """The trusted configuration (the default branch's, never the PR's): sets `config`, or
        returns why it is invalid. One GraphQL request reads it with the branch's commit (the one
        whose CI the plan copies) and, named ahead (ReadAhead), what the command reads next: the
        comment as it is now, the default branch's workflows directory, root listing and contract,
        the head's contract and the external consumers' workflows not kept in this process. A command that is
        the first delivery for its PR then lists the head and reads its test files, nothing more.
        `ahead` False (a step that reads no selection): the configuration and the commit only."""
        guess = ReadAhead.remembered(self.client, self.repo) if ahead else ReadAhead((), "", ())
        consumers = [label for label in guess.consumers if kept_consumer(self.client, label) is None]
        node = (comment or {}).get("node_id")
        read = self.client.read_branch(self.repo, default_branch, files=[CONFIG_PATH, *guess.contract],
                                       directories=[guess.workflows_dir] if ahead else [], listings=[""] if ahead else [],
                                       at=[f"{self.head_sha}:{path}" for path in guess.contract],
                                       comment=node, elsewhere=consumers)
        for label in consumers if read.commit is not None else ():  # else the request found nothing at all
            keep_consumer(self.client, label, read.elsewhere.get(label))
        if node is not None:
            self._comment_read = (comment["id"], read.comment)
        self.config, problems = parsed_config(read.files.get(CONFIG_PATH))
        if self.config is None:
            return problems
        ReadAhead.of(self.config).remember(self.client, self.repo)
        if read.commit is not None and self.config.paths.workflows_dir.rstrip("/") in read.directories:
            self._default_tree = GitHubTree.from_read(self.client, self.repo, read)
        return []

    def comment_body_now(self, comment: dict) -> str | None:
        """The comment's body as GitHub has it now (None: deleted): as read_trusted read it in this
        job, else asked."""
        if self._comment_read is not None and self._comment_read[0] == comment["id"]:
            return self._comment_read[1]
        now = tolerate_gone(lambda: self.client.issue_comment(self.repo, comment["id"]))
        return None if now is None else now.get("body")

    def analyse(self, suite: str | None = None, files=()) -> Outcome:
        """The head's runnable suites (and `suite`'s selection and plan), read in the bounded
        analysis child, with the default branch's CI and the external consumers' workflows."""
        from bot.analysis.sources import external_consumers
        from bot.store.index import RegistrationIndex

        self._analysis = analyse_bounded(self.tree, self.config, suite=suite, files=files, head_sha=self.head_sha,
                                         scan_cache=RegistrationIndex(self.store_url, self.repo), log=self.job.log,
                                         base=self.default_tree, consumers_from=external_consumers(self.client, self.config))
        return self._analysis

    def runnable_suites(self) -> list[str] | None:
        """None when the head could not be read within the analysis limits."""
        if not self.config.dispatch:
            return []  # nothing is dispatchable: no need to read the head's inventory
        return (self._analysis or self.analyse()).runnable

    def audit(self, action: str, **values) -> None:
        values.setdefault("pull_number", self.number)
        values.setdefault("head_sha", self.head_sha)
        store.audit(self.store_url, repository=self.repo, action=action, delivery_id=self.job.delivery_id, **values)

    def audit_once(self, key: str, step: str, action: str, **values) -> bool:
        """audit(), once per (key, step): the step's claim and the entry are one transaction."""
        values.setdefault("pull_number", self.number)
        values.setdefault("head_sha", self.head_sha)
        return store.audit_once(self.store_url, key, step, repository=self.repo, action=action,
                                delivery_id=self.job.delivery_id, **values)

    def change(self, request, event: str, audit: dict | None = None, **values):
        return change(self.job, request, event, audit, **values)


@dataclass
class Answer:
    """What one event's use case has to post on the pull request, in the order it was said: reactions
    on the command's comment and replies (each once per key and step, `reply`). The event's handler
    posts it; what was said before a failure is posted before the failure goes on (`kept`)."""

    pull: Pull | None = None
    posts: list = field(default_factory=list)

    def react(self, comment_id: int | None, content: str) -> None:
        self.posts.append(("react", comment_id, content))

    def say(self, key: str, body: str, step: str = "reply") -> None:
        self.posts.append(("reply", key, body, step))

    def refuse(self, comment_id: int | None, key: str, body: str, step: str = "reply") -> None:
        """The refused command's confused reaction and its reply."""
        self.react(comment_id, "confused")
        self.say(key, body, step)

    def post(self) -> None:
        posts, self.posts = self.posts, []
        for kind, *what in posts:
            if kind == "react":
                react(self.pull, *what)
            else:
                key, body, step = what
                reply(self.pull, key, body, step=step)

    def kept(self):
        return _Kept(self)


class _Kept:
    """`with answer.kept():` a failure inside posts what was said until then, then goes on."""

    def __init__(self, answer: Answer):
        self.answer = answer

    def __enter__(self) -> Answer:
        return self.answer

    def __exit__(self, kind, exc, tb) -> bool:
        if exc is not None and isinstance(exc, Exception) and self.answer.pull is not None:
            self.answer.post()
        return False


def post(answer: Answer | None) -> None:
    """A handler's one step after its use case: post what it answered (nothing for None)."""
    if answer is not None:
        answer.post()


def change(job, request, event: str, audit: dict | None = None, **values):
    """One event of bot/store/ondemand_states.py on `request`: its status, `values` and audit entry
    (this delivery's) in one transaction. The entry takes the request's repository, PR, head, suite
    and id from the row (bot.store.ondemand.change): `audit` gives the rest (actor, files, detail...).
    The row as changed, or None: another worker moved it first."""
    if audit is not None:
        audit = {"delivery_id": getattr(job, "delivery_id", None), **audit}
    return store.change(job.store_url, request.id, event, audit=audit, **values)


def trusted_config(client, repo: str, default_branch: str | None) -> tuple[Config | None, list[str]]:
    """The configuration on the default branch (never the PR's copy); (None, problems) when invalid.
    A command reads it with more beside it: Pull.read_trusted."""
    return parsed_config(client.branch_file(repo, CONFIG_PATH, default_branch))


def parsed_config(data: bytes | None) -> tuple[Config | None, list[str]]:
    config, findings = load_config(data)
    if findings:
        return None, [f"line {f.span.line}: {f.message}" for f in findings]
    return config, []


def budget_used(store_url: str, repo: str) -> float:
    return store.gpu_hours_since(store_url, repo, store.now() - BUDGET_WINDOW)


def selected_rows(request) -> list[tuple[str, float | None]]:
    return [(f, e) for f, e in request.details.get("selected", [])]


def requested_files(request) -> list[str]:
    return list(request.details.get("requested", []))


def cost_notes(request) -> list[str]:
    return list(request.details.get("cost_notes", []))


# -- steps: once per key --------------------------------------------------------------------------
def once(pull: Pull, key: str, step: str, action) -> bool:
    """Run `action()` only if this caller claims (key, step); a transient failure releases the claim."""
    if not store.claim_step(pull.store_url, key, step):
        return False
    try:
        action()
    except (TransientError, GitHubError) as exc:
        if isinstance(exc, TransientError) or exc.status >= 500:
            store.release_step(pull.store_url, key, step)
        raise
    return True


def reply(pull: Pull, key: str, body: str, step: str = "reply") -> None:
    # A PR that is gone (404/410) cannot be answered; what happened is in the audit log already.
    # Every reply passes checks.wording.visible: no bidi override or invisible character of a name
    # reaches the comment raw, whichever text interpolated it.
    body = visible(body)
    once(pull, key, step, lambda: tolerate_gone(lambda: pull.client.comment(pull.repo, pull.number, body)))


def react(pull: Pull, comment_id: int | None, content: str) -> None:
    """A reaction on the command's comment; one deleted meanwhile (404/410) gets none, and the
    step after it (audit, reply, dispatch follow-through) still happens."""
    if comment_id is not None:
        tolerate_gone(lambda: pull.client.react(pull.repo, comment_id, content))


# -- check runs of a request ----------------------------------------------------------------------
def close_request_check(pull: Pull, request, title: str, detail: str, conclusion: str = "cancelled") -> None:
    close_check(pull.client, pull.repo, request, title, detail, conclusion)


def close_check(client, repo: str, request, title: str, detail: str, conclusion: str = "cancelled") -> None:
    if request.request_check_run_id is None:
        return
    tolerate_gone(lambda: client.update_check_run(repo, request.request_check_run_id, {
        "status": "completed", "conclusion": conclusion, "completed_at": iso_now(), "actions": [],
        "output": texts.request_closed_output(title, detail)}))


# -- other repositories ---------------------------------------------------------------------------
def client_for(job, repo: str, known=None):
    """A client for `repo` (the App must be installed there); `known`: (its repository, its client)."""
    if known is not None and known[0] == repo:
        return known[1]
    github = job.github
    installation = github.app_request("GET", f"/repos/{repo}/installation", "/repos/{owner}/{repo}/installation")
    return github.for_installation(int(installation["id"]))


# -- things that vanished -------------------------------------------------------------------------
GONE = (404, 410)


def tolerate_gone(action, also: tuple = ()):
    """Run a follow-up call; a comment, PR, run or check run that no longer exists (404/410, and
    any status in `also`) is not a failure of the job: None is returned and the rest carries on."""
    try:
        return action()
    except GitHubError as exc:
        if exc.status in GONE or exc.status in also:
            return None
        raise


def vanished(job, repo: str, number: int, *, actor: str | None, detail: str) -> None:
    """The audit entry of a step whose pull request GitHub no longer has (nothing can be answered)."""
    store.audit(job.store_url, repository=repo, action="vanished", pull_number=number, actor=actor, detail=detail,
                delivery_id=job.delivery_id)
