"""Which handler runs for which event and action: every bot/worker/handlers module's Router, composed.

The registry only: a job's context (bot/worker/job.py) lives below it, so that the handlers it
loads by name never import it back.
"""

from __future__ import annotations

import importlib

from gidgethub.routing import Router


# Every handler module, listed (as bedevere's __main__ composes its routers): what the App reacts
# to is read here, and a new module is one visible line. tests/bot/worker/test_routing.py fails when a module
# of bot/worker/handlers is missing from this list.
HANDLER_MODULES = (
    "bot.worker.handlers.pull_requests",   # the "CI registrations" check run
    "bot.worker.handlers.duration_sources",  # durations from the CI runs' job logs
    "bot.worker.handlers.installations",   # installations and their repositories
    "bot.worker.handlers.rocm_commands",   # /run-rocm, /approve-rocm, /deny-rocm, /rocm-status
    "bot.worker.handlers.rocm_approvals",  # the Approve run button; a push makes requests stale
    "bot.worker.handlers.summary_actions", # the summary's Run ROCm suite buttons: a maintainer's /run-rocm
    "bot.worker.handlers.rocm_runs",       # an on-demand run finished
    "bot.worker.handlers.calibration",     # /calibrate-est-time: the calibration pull request now
)


def build_router() -> Router:
    return Router(*(importlib.import_module(name).router for name in HANDLER_MODULES))
