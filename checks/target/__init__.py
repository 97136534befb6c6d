"""The target's contract: its runner, workflows, suites, configuration and how its CI runs a suite."""
