"""The target's contract: its runner and its policy, suites, and how its CI runs a suite (suite_runs, target_ci, the run plans and their cost)."""
