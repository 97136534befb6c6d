"""The budget's price of a /run-rocm selection.

The computation is checks/target/run_cost.py `charge` (the one the reviewer's summary and
`run-plan` show); here only which contract decides whether a non-positive est_time is refused:
the trusted runner's (the default branch's), as bot/ondemand/selection.py `analyse` reads it.
"""

from __future__ import annotations

from checks.target.run_cost import Costing, charge


def cost_selection(selection, contract) -> Costing:
    """The cost of a /run-rocm selection under its run plan's timeouts."""
    return charge(selection.registrations, selection.plan,
                  est_time_positive=bool(getattr(contract, "est_time_positive", False)))
