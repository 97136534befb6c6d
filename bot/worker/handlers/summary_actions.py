"""The summary's "Run ROCm suite N" buttons: a maintainer's click is that maintainer's `/run-rocm SUITE`.

The request stage decides (bot/ondemand/request.py `on_summary_button`: the suite read back from
the summary this App posted, the clicker's permission asked of GitHub now, then the comment
command's own path); this handler posts what it answers.
"""

from __future__ import annotations

from gidgethub.routing import Router

from bot.ondemand import request
from bot.ondemand.pull import post

router = Router()


@router.register("check_run", action="requested_action")
async def run_button(event, ctx):
    post(request.on_summary_button(ctx, event.data))
