"""Comment commands on pull requests: /run-rocm, /approve-rocm, /deny-rocm, /rocm-status.

The request stage decides (bot/ondemand/request.py `on_comment`: who may do what, which suite may
run, every refusal); this handler posts what it answers.
"""

from __future__ import annotations

from gidgethub.routing import Router

from bot.ondemand import request
from bot.ondemand.pull import post

router = Router()


@router.register("issue_comment", action="created")
async def comment_created(event, ctx):
    post(request.on_comment(ctx, event.data))
