"""A stateful GitHub simulator for the test suite, validated against GitHub's official API descriptions."""

from .core import (App, Delivery, Fault, GitHubSimulator, Installation, PullRequest, Repo,
                   SimulatorError, sign)

__all__ = ["App", "Delivery", "Fault", "GitHubSimulator", "Installation", "PullRequest", "Repo",
           "SimulatorError", "sign"]
