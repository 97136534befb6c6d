"""When to try a GitHub call again, and how long to wait: backoff, jitter, Retry-After, rate limits."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from bot.infra.settings import env_float as _env_float


class GitHubError(Exception):
    """GitHub answered with an error that trying again will not fix (4xx other than rate limits)."""

    def __init__(self, status: int, message: str, endpoint: str = ""):
        super().__init__(f"{status} {endpoint}: {message}".strip())
        self.status, self.message, self.endpoint = status, message, endpoint


class TransientError(Exception):
    """5xx, timeouts and dropped connections that outlasted the per-request retries: retry the job later."""


class RateLimited(TransientError):
    """GitHub asked us to wait (403/429): the job comes back after `wait_s`, its worker is not held."""

    def __init__(self, wait_s: float, installation: int | None, endpoint: str = ""):
        super().__init__(f"rate limited on {endpoint or 'GitHub'} for {wait_s:.0f}s")
        self.wait_s, self.installation = wait_s, installation




@dataclass(frozen=True)
class RetryPolicy:
    """Per request: `attempts` tries on 5xx/timeouts/dropped connections, full-jitter backoff.

    Per job: `job_attempts` runs in all (rate-limit waits included); after that the job fails visibly.
    """

    attempts: int = 3
    base_s: float = 0.5
    cap_s: float = 8.0
    job_attempts: int = 5
    job_base_s: float = 5.0
    job_cap_s: float = 300.0
    secondary_default_s: float = 60.0  # GitHub: without retry-after, wait at least a minute
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 30.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    @classmethod
    def from_env(cls) -> "RetryPolicy":
        return cls(
            attempts=int(_env_float("CI_REGISTRAR_HTTP_ATTEMPTS", 3)),
            base_s=_env_float("CI_REGISTRAR_HTTP_BACKOFF_S", 0.5),
            job_attempts=int(_env_float("CI_REGISTRAR_JOB_ATTEMPTS", 5)),
            job_base_s=_env_float("CI_REGISTRAR_JOB_BACKOFF_S", 5.0),
            read_timeout_s=_env_float("CI_REGISTRAR_HTTP_TIMEOUT_S", 30.0),
        )

    @property
    def timeout(self) -> tuple[float, float]:
        return (self.connect_timeout_s, self.read_timeout_s)

    def backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(cap, base * 2**(attempt-1))], attempt counted from 1."""
        return self.rng.uniform(0, min(self.cap_s, self.base_s * 2 ** (attempt - 1)))

    def job_backoff(self, attempt: int) -> float:
        ceiling = min(self.job_cap_s, self.job_base_s * 2 ** (attempt - 1))
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)


def is_retryable_status(status: int) -> bool:
    return status >= 500


def rate_limit_wait(status: int, headers, body_message: str = "", *, policy: RetryPolicy, now: float | None = None):
    """Seconds GitHub asks us to wait, or None when this 403/429 is not a rate limit (a real refusal)."""
    if status not in (403, 429):
        return None
    now = time.time() if now is None else now
    retry_after = headers.get("retry-after")
    if retry_after:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            pass
    if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset"):
        try:
            return max(1.0, float(headers["x-ratelimit-reset"]) - now + 1)
        except ValueError:
            pass
    if status == 429 or "rate limit" in body_message.lower():
        return policy.secondary_default_s
    return None
