"""The on-demand runs that are evidence for a pull request: those this App dispatched and completed.

A run counts only through its request row (bot/store/ondemand.py): a completed request of this
repository (and pull request), whose recorded workflow run is the one the measurements came from
(`source` `on-demand:<request id>`, the same `run_id`, the request's head SHA). A measurement
imported by hand, a log edited to name another file or a run the App did not dispatch matches no
request and is never evidence. The judgement itself is checks/calibration/evidence.py.
"""

from __future__ import annotations

import sqlalchemy as sa

from bot.store.measurements import Measurement, iso, session_for
from bot.store.ondemand import COMPLETED, RocmRequest


def head_runs(url: str, *, repository: str | None, head_sha: str, pull_number: int | None = None) -> dict:
    """{"head_sha": head_sha, "runs": [...]} for checks.engine.check_tree's `head_runs`.

    pull_number given (the App): every completed request of that pull request, whatever its head
    (a run of an earlier head is shown as such, never counted); none (the command line): the
    requests for `head_sha` itself. Each file's result in a run is its last attempt's.
    """
    query = sa.select(RocmRequest).where(RocmRequest.status == COMPLETED, RocmRequest.workflow_run_id.is_not(None))
    if repository is not None:
        query = query.where(RocmRequest.repository == repository)
    if pull_number is not None:
        query = query.where(RocmRequest.pull_number == int(pull_number))
    else:
        query = query.where(RocmRequest.head_sha == head_sha)
    runs: list[dict] = []
    with session_for(url) as session:
        requests = {f"on-demand:{r.id}": r for r in session.scalars(query)}
        if not requests:
            return {"head_sha": head_sha, "runs": []}
        last: dict[tuple[str, str], Measurement] = {}
        for m in session.scalars(sa.select(Measurement).where(Measurement.source.in_(list(requests)))
                                 .order_by(Measurement.attempt, Measurement.measured_at, Measurement.id)):
            request = requests[m.source]
            if (m.run_id != request.workflow_run_id or m.repository != request.repository
                    or m.head_sha != request.head_sha):
                continue  # not the run this request dispatched, or not its head
            last[(m.source, m.file)] = m  # ordered by attempt: the last attempt stays
        for (source, _file), m in sorted(last.items()):
            request = requests[source]
            runs.append({"file": m.file, "backend": m.backend, "hardware": m.hardware, "suite": request.suite,
                         "outcome": m.outcome, "elapsed": m.elapsed_s, "est_time": m.est_time, "at": iso(m.measured_at),
                         "run": request.run_url, "head_sha": request.head_sha, "on_demand": True,
                         "request": request.id})
    return {"head_sha": head_sha, "runs": runs}
