"""Whether the PR's head now is the head its commenter saw: a command acts on that head only.

A maintainer writes `/run-rocm` (or `/approve-rocm`) while the head is A; if the author pushes B
before the job runs (a queue backlog, a retry), B must not run on that authority. GitHub gives
no push time on the pull request itself, so the head now counts as seen when one of two
GitHub-clocked facts says it was already the head when the comment was written:

- the head repository's `pushed_at` (in GET pulls/{n}: `head.repo.pushed_at`) is before the
  comment's `created_at`: nothing at all was pushed to that repository since;
- or the head noted from the PR's own `synchronize`/`opened` deliveries (bot/store/heads.py) is
  this head, with that push's `pull_request.updated_at` before the comment.

Timestamps have whole seconds: a push in the comment's own second does not count as seen. When
neither fact holds (the head moved, or its push is not noted yet) the command is answered and
nothing is dispatched; the head is noted then, so a command written after that answer is bound
to it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from bot.store import heads


def parse_time(value) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class Unseen:
    head_sha: str  # the PR's head now
    moved: bool  # True: it was pushed after the comment; False: its push time is not known yet


def unseen_head(store_url: str, repo: str, number: int, pull_data: dict, written_at: dt.datetime | None) -> Unseen | None:
    """None when the PR's head now was its head when the comment was written (at `written_at`)."""
    head = pull_data.get("head") or {}
    head_sha = str(head.get("sha") or "")
    if written_at is None:
        return Unseen(head_sha, False)
    pushed = parse_time((head.get("repo") or {}).get("pushed_at"))
    if pushed is not None and pushed < written_at:
        return None
    try:
        noted = heads.noted_head(store_url, repo, number)
    except Exception:  # noqa: BLE001 - a store that cannot say: not seen
        noted = None
    if noted is not None and noted[0] == head_sha:
        at = parse_time(noted[1])
        if at is not None and at < written_at:
            return None
        return Unseen(head_sha, at is not None)
    if noted is not None:
        at = parse_time(noted[1])
        if at is not None and at >= written_at:
            return Unseen(head_sha, True)  # even the older noted head came after the comment
    # Not noted (a missed or not yet written synchronize): note it now, with the PR's updated_at
    # (never before this head's push), so the next command is bound to it.
    updated = pull_data.get("updated_at")
    if isinstance(updated, str) and head_sha:
        try:
            heads.note(store_url, repo, number, head_sha, updated)
        except Exception:  # noqa: BLE001 - only the note is lost
            pass
    return Unseen(head_sha, False)
