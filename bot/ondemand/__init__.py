"""On-demand MI350 runs: the /run-rocm command, maintainer approval, dispatch and its follow-through.

grammar (comment text -> command), permissions (who may run or approve, checked live), selection
(which registrations a command selects at the head SHA, and their cost), texts (what the PR sees),
flow (requests, approvals, dispatch). The handlers in bot/worker/handlers/rocm_*.py route events here.
"""
