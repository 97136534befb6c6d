"""Fixes offered as GitHub suggestions: a review comment with a ```suggestion``` block per fix.

GitHub accepts a review comment only on lines of the pull request's diff, so a fix elsewhere (an
untouched file broken by a renamed suite) stays an annotation with the change in its details.
Each comment carries a marker keyed by head SHA and fix: a job that runs twice posts nothing twice.
"""

from __future__ import annotations

import hashlib
import re

from checks.model import Finding, Report
from checks.reporting.render import suggestion_comment

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
MARKER = "<!-- ci-registrar:suggestion:{key} -->"
_MARKER_RE = re.compile(r"<!-- ci-registrar:suggestion:([0-9a-f]+) -->")
MAX_PER_RUN = 20  # more than this on one push is noise: the annotations list them all


def commentable_lines(patch: str | None) -> set[int]:
    """Right-side line numbers inside the diff's hunks (added and context lines)."""
    lines: set[int] = set()
    right = None
    for text in (patch or "").split("\n"):
        hunk = _HUNK.match(text)
        if hunk:
            right = int(hunk.group(1))
            continue
        if right is None or text.startswith("\\"):
            continue
        if text.startswith("-"):
            continue
        lines.add(right)
        right += 1
    return lines


def _key(head_sha: str, finding: Finding) -> str:
    fix = finding.fix
    return hashlib.sha1(f"{head_sha}\0{finding.rule}\0{fix.file}\0{fix.start_line}\0{fix.text}".encode()).hexdigest()[:20]


def post_suggestions(client, repo: str, number: int, head_sha: str, report: Report, pull_files: list[dict]) -> int:
    """Post the fixes that land on diff lines and are not posted yet; returns how many were posted."""
    in_diff = {f["filename"]: commentable_lines(f.get("patch")) for f in pull_files if f.get("status") != "removed"}
    wanted = []
    for finding in report.findings:
        fix = finding.fix
        if fix is None or fix.file not in in_diff:
            continue
        if all(n in in_diff[fix.file] for n in range(fix.start_line, fix.end_line + 1)):
            wanted.append(finding)
    if not wanted:
        return 0
    posted = {m for c in client.review_comments(repo, number) for m in _MARKER_RE.findall(c.get("body") or "")}
    count = 0
    for finding in wanted[:MAX_PER_RUN]:
        key = _key(head_sha, finding)
        if key in posted:
            continue
        fix = finding.fix
        client.create_review_comment(repo, number, body=suggestion_comment(finding) + "\n" + MARKER.format(key=key),
                                     commit_id=head_sha, path=fix.file, line=fix.end_line, start_line=fix.start_line)
        posted.add(key)
        count += 1
    return count
