"""Prometheus metrics: deliveries, queue depth, job durations, GitHub calls, rate limit left.

Under gunicorn with several workers, PROMETHEUS_MULTIPROC_DIR (set by bot/web/server.py)
makes /metrics add up every worker process instead of answering for whichever one it hit.
"""

from __future__ import annotations

import os

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

DELIVERIES = Counter(
    "ci_registrar_deliveries_total",
    "Webhook deliveries by event, action and outcome (accepted, duplicate, ping, rejected, invalid, done, failed ...)",
    ["event", "action", "outcome"],
)
QUEUE_DEPTH = Gauge("ci_registrar_queue_depth", "Jobs waiting in the queue", ["state"], multiprocess_mode="liveall")
JOB_DURATION = Histogram(
    "ci_registrar_job_duration_seconds", "Time a worker spent on one job", ["event", "outcome"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
)
GITHUB_CALLS = Counter(
    "ci_registrar_github_api_calls_total", "GitHub API calls by endpoint (path template) and status", ["method", "endpoint", "status"]
)
RATE_LIMIT_REMAINING = Gauge(
    "ci_registrar_github_rate_limit_remaining", "x-ratelimit-remaining last seen, per installation", ["installation"],
    multiprocess_mode="liveall",
)
DEAD_LETTERS = Gauge(
    "ci_registrar_dead_letters", "Deliveries set aside after their job crashed its process too often (status dead)",
    multiprocess_mode="max",
)
JOB_FAILURES = Counter("ci_registrar_job_failures_total", "Jobs that failed for good after their retry budget", ["event", "reason"])


def render(queue=None, dead_letters: int | None = None) -> tuple[bytes, str]:
    if dead_letters is not None:
        DEAD_LETTERS.set(dead_letters)
    if queue is not None:
        try:
            QUEUE_DEPTH.labels("queued").set(queue.depth())
            QUEUE_DEPTH.labels("in_flight").set(queue.inflight())
        except Exception:  # an unreachable queue shows in /readyz; /metrics still answers
            pass
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST
