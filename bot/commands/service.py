"""`ci-registrar serve | worker | manifest`: the web process, the worker process, the App manifest."""

from __future__ import annotations

import json
import os
import threading

import click

DEFAULT_THREADS = 4

def shutdown_grace_s() -> float:
    from bot.web.server import shutdown_grace_s as grace

    return grace()


def _migrate(settings) -> None:
    """The store at its migrations' head before this process serves or takes a job: the embedded
    default creates its file on first start; on PostgreSQL the migration lock is taken
    (bot.store.db.upgrade), so a web process and workers started together on a fresh database wait
    for one another's migration instead of reading tables that do not exist yet."""
    from bot.store.db import get_engine, upgrade
    from bot.store.service import is_transient

    try:
        upgrade(settings.database_url)
    except Exception as exc:
        if not is_transient(exc):
            raise
        # The store is away: the process starts anyway and its jobs wait for the store as they
        # always do (bot/worker/tasks.py); the next start migrates.
        from bot.infra.logging import get_logger

        get_logger("ci_registrar.store").warning("store unreachable at start, its migrations not checked",
                                                 error=type(exc).__name__)
    get_engine(settings.database_url).dispose()  # no connection may cross gunicorn's fork


def _consumer(queue, threads: int):
    queue.runtime.share_threads(threads)  # one installation never holds every thread
    queue.runtime.share_analysis_slots()  # and never every analysis slot, in any process
    # Poll at most every 0.5 s when idle: the Redis claim is a non-blocking script.
    # SIGTERM is graceful (what systemd, Docker and Heroku send), bounded by the grace period.
    return queue.create_consumer(workers=threads, worker_type="thread", periodic=True, initial_delay=0.05,
                                 backoff=1.5, max_delay=0.5, check_worker_health=True,
                                 graceful_signal="TERM", shutdown_timeout=shutdown_grace_s())


@click.command()
@click.option("--host", default=lambda: os.environ.get("HOST", "127.0.0.1"),
              show_default="127.0.0.1 ($HOST; the Docker image and the Procfile set 0.0.0.0)")
@click.option("--port", type=int, default=None, help="Default: $PORT, else 3000.")
@click.option("--threads", type=int, default=DEFAULT_THREADS, show_default=True,
              help="Job threads (in each web worker process).")
@click.option("--no-worker", is_flag=True, help="Serve HTTP only (jobs run in `ci-registrar worker` processes).")
def serve(host, port, threads, no_worker):
    """The web service under gunicorn, with job threads; SQLite queue and store unless REDIS_URL/DATABASE_URL say otherwise.

    One web worker process by default (WEB_CONCURRENCY sets more; with --no-worker it is 2 per core).
    """
    from bot.infra.environment import check_environment
    from bot.infra.logging import configure
    from bot.web.server import run
    from bot.infra.settings import load_settings

    check_environment()  # every variable, before anything starts: one line and exit 2 for a bad one
    configure()
    settings = load_settings()
    _secure_data_dir(settings)
    _migrate(settings)
    run(host, port or settings.port, jobs=0 if no_worker else threads,
        proxy_url=os.environ.get("CI_REGISTRAR_WEBHOOK_PROXY_URL") or None)


@click.command()
@click.option("--threads", type=int, default=DEFAULT_THREADS, show_default=True)
@click.option("--metrics-port", type=int, default=None, help="Serve this process's Prometheus metrics on this port.")
def worker(threads, metrics_port):
    """A worker process only: runs queued jobs (any number of these may share one Redis queue)."""
    from bot.infra.logging import configure, get_logger
    from bot.worker.queue import open_queue
    from bot.infra.settings import load_settings

    from bot.worker.tasks import start_reconciler
    from bot.infra.environment import check_environment

    check_environment()  # every variable, before anything starts: one line and exit 2 for a bad one
    configure()
    settings = load_settings()
    _secure_data_dir(settings)
    _migrate(settings)
    if metrics_port:
        from prometheus_client import start_http_server

        start_http_server(metrics_port)
    queue = open_queue(settings)
    log = get_logger("ci_registrar.worker")
    log.info("worker started", threads=threads, pid=os.getpid(), queue="redis" if settings.redis_url else "sqlite")
    start_reconciler(queue.runtime)
    _consumer(queue, threads).run()
    stuck = [t.name for t in threading.enumerate() if t.name.startswith("Worker-") and t.is_alive()]
    log.info("worker stopped", cut_off=stuck)
    if stuck:
        # A job still running after the grace period: its message comes back (lease) on the next
        # start, counted as an interruption. Nothing it holds may keep this process alive.
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _secure_data_dir(settings) -> None:
    from bot.store.db import secure_dir

    secure_dir(settings.data_dir)


@click.command()
@click.option("--url", "public_url", required=True, help="This service's public base URL (webhooks arrive at URL/webhook).")
@click.option("--name", default=None, metavar="NAME",
              help="The App's name, unique across GitHub, at most 34 characters (default: CI Registrar (<random>)).")
def manifest(public_url, name):
    """Print the GitHub App manifest for a deployment at URL (to register the App by hand).
    Exit 2: URL is not an absolute http(s) URL."""
    from bot.commands.errors import fail
    from bot.web.onboarding import app_name_problem, default_app_name, manifest_for, valid_public_url

    problem = valid_public_url(public_url)
    if problem:
        fail("manifest", f"--url {public_url[:100]!r}: {problem}")
    name = default_app_name(None) if name is None else " ".join(name.split())
    if app_name_problem(name):
        fail("manifest", f"--name: {app_name_problem(name)}")

    click.echo(json.dumps(manifest_for(public_url, name), indent=2))
