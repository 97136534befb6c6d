"""An on-demand run finished: its "MI350 · <suite>" check run completes, its durations are stored.

The work is the completion stage's (bot/ondemand/completion.py `on_run_completed`), which a later
command also reaches when this event never arrived.
"""

from __future__ import annotations

from gidgethub.routing import Router

from bot.ondemand import completion

router = Router()


@router.register("workflow_run", action="completed")
async def on_demand_run_completed(event, ctx):
    completion.on_run_completed(ctx, event.data)
