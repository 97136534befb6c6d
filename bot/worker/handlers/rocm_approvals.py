"""Approval by button, and what a push does to approvals: the "Approve run" click, stale requests.

The request stage decides the click (bot/ondemand/request.py `on_approve_button`), housekeeping
the push (bot/ondemand/housekeeping.py `on_push`); this handler posts what they answer.
"""

from __future__ import annotations

from gidgethub.routing import Router

from bot.ondemand import housekeeping, request
from bot.ondemand.pull import post

router = Router()


@router.register("check_run", action="requested_action")
async def approve_button(event, ctx):
    post(request.on_approve_button(ctx, event.data))


@router.register("pull_request", action="synchronize")
async def head_moved(event, ctx):
    post(housekeeping.on_push(ctx, event.data))
