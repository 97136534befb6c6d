"""On-demand MI350 runs: the /run-rocm command, maintainer approval, dispatch and its follow-through.

grammar (comment text -> command), permissions (who may run or approve, checked live), seen (the
head the commenter saw), selection (which registrations a command selects at the head SHA), cost
(their price), texts (everything the PR sees, each built here once), and the stages, in order of
import: pull (the pull request and the once-only steps every stage takes on it), completion (a
finished run's results), dispatch (an approved request becomes a run), housekeeping (expiry, stale
requests, superseded runs) and request (a command or click makes, approves, refuses or reports
requests). The handlers in bot/worker/handlers/ make one call per event into a stage's use case
and post what it answers.
"""
