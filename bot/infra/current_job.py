"""The job this thread (or its asyncio.run) is running: the worker's JobContext (bot/worker/job.py).

It lives below the worker so that what runs inside a job without belonging to the worker (the
bounded analysis, bot/analysis/, which gives the job's installation its fair share of slots)
can ask for it without importing the worker. The job runtime (bot/worker/tasks.py) sets it.
"""

from __future__ import annotations

import contextvars

# lets a check's completion disarm the failure reports of that job without threading the context
# through every call (bot.worker.job.check_run_completed)
CURRENT_JOB: contextvars.ContextVar["JobContext | None"] = contextvars.ContextVar("ci_registrar_job", default=None)  # noqa: F821
