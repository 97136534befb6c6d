"""An on-demand run finished: its "MI350 · <suite>" check run completes, its durations are stored.

The run is found by the id the dispatch recorded (or, when GitHub's dispatch answer carried none,
by the run name the shipped workflow gives: it holds the head SHA and the suite). The work itself
is bot.ondemand.flow.finish, which a later command also uses when this event never arrived.
"""

from __future__ import annotations

from gidgethub.routing import Router

from bot.ondemand import flow
from bot.store import ondemand as store

router = Router()


def _request_for(ctx, repo: str, run: dict):
    request = store.request_by_workflow_run(ctx.store_url, repo, int(run["id"]))
    if request is not None:
        return request
    title = str(run.get("display_title") or run.get("name") or "")
    for candidate in store.requests_without_run(ctx.store_url, repo):
        if candidate.head_sha in title and candidate.suite in title:
            store.update_request(ctx.store_url, candidate.id, workflow_run_id=int(run["id"]),
                                 run_url=run.get("html_url"))
            return store.get_request(ctx.store_url, candidate.id)
    return None


@router.register("workflow_run", action="completed")
async def on_demand_run_completed(event, ctx):
    run = event.data["workflow_run"]
    if run.get("event") != "workflow_dispatch":
        return
    repo = event.data["repository"]["full_name"]
    request = _request_for(ctx, repo, run)
    if request is None or request.status != store.DISPATCHED:
        return
    flow.finish(ctx, request, run, ctx.client)
