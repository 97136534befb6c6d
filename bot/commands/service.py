"""`ci-registrar serve | worker | manifest`: the web process, the worker process, the App manifest."""

from __future__ import annotations

import json
import os
import signal
import threading

import click

from bot.settings import env_float as _env_float

DEFAULT_THREADS = 4




def shutdown_grace_s() -> float:
    """How long SIGTERM waits for running jobs; a job still running then is cut off (it comes back
    on the next start, counted as an interruption) and the process exits."""
    return _env_float("CI_REGISTRAR_SHUTDOWN_GRACE_S", 20)


def read_timeout_s() -> float:
    """`serve`: a connection that sends nothing for this long is closed (headers or body)."""
    return _env_float("CI_REGISTRAR_READ_TIMEOUT_S", 10)


def _exit_after(seconds: float, log) -> None:
    """A last resort: whatever still holds the process after the grace period, it exits."""
    def watchdog():
        import time

        time.sleep(seconds)
        log.error("shutdown grace elapsed, exiting now", grace_s=seconds)
        os._exit(0)

    threading.Thread(target=watchdog, name="shutdown-watchdog", daemon=True).start()


def _migrate_if_embedded(settings) -> None:
    """The embedded default creates its store on first start; PostgreSQL is migrated by the release step."""
    from bot.store.db import upgrade

    if settings.database_url.startswith("sqlite"):
        upgrade(settings.database_url)


def _consumer(queue, threads: int):
    from bot.fairness import share_for

    queue.runtime.shares.limit = share_for(threads)  # one installation never holds every thread
    # Poll at most every 0.5 s when idle: the Redis claim is a non-blocking script.
    # SIGTERM is graceful (what systemd, Docker and Heroku send), bounded by the grace period.
    return queue.create_consumer(workers=threads, worker_type="thread", periodic=True, initial_delay=0.05,
                                 backoff=1.5, max_delay=0.5, check_worker_health=True,
                                 graceful_signal="TERM", shutdown_timeout=shutdown_grace_s())


@click.command()
@click.option("--host", default=lambda: os.environ.get("HOST", "127.0.0.1"),
              show_default="127.0.0.1 ($HOST; the Docker image sets 0.0.0.0)")
@click.option("--port", type=int, default=None, help="Default: $PORT, else 3000.")
@click.option("--threads", type=int, default=DEFAULT_THREADS, show_default=True, help="Worker threads for jobs.")
@click.option("--no-worker", is_flag=True, help="Serve HTTP only (jobs run in `ci-registrar worker` processes).")
def serve(host, port, threads, no_worker):
    """One process: HTTP on PORT and worker threads; SQLite queue and store unless REDIS_URL/DATABASE_URL say otherwise."""
    from werkzeug.serving import WSGIRequestHandler, make_server

    from app import create_app
    from bot.logging import configure, get_logger
    from bot.queue import open_queue
    from bot.settings import load_settings

    configure()
    log = get_logger("ci_registrar.serve")
    settings = load_settings()
    _secure_data_dir(settings)
    _migrate_if_embedded(settings)
    queue = open_queue(settings)
    app = create_app(settings, queue=queue)
    app.config["SETTINGS_FROM_ENV"] = True  # onboarding's credentials file is picked up without a restart
    consumer = None
    if not no_worker:
        from bot.tasks import start_reconciler

        consumer = _consumer(queue, threads)
        consumer.start()
        consumer.supervise()  # start() has no health check of its own: a dead worker is replaced
        app.extensions["ci_registrar.consumer"] = consumer  # /readyz: no live worker, not ready
        start_reconciler(queue.runtime)

    class Handler(WSGIRequestHandler):
        timeout = read_timeout_s()  # per read; the whole body has its own deadline (bot.webhooks)

    server = make_server(host, port or settings.port, app, threaded=True, request_handler=Handler)
    stopping = threading.Event()

    def stop(signum, _frame):
        log.info("stopping", signal=signal.Signals(signum).name)
        if stopping.is_set():
            return
        stopping.set()
        _exit_after(shutdown_grace_s() + 10, log)
        threading.Thread(target=server.shutdown, daemon=True).start()

    proxy = None
    if os.environ.get("CI_REGISTRAR_WEBHOOK_PROXY_URL"):
        from bot.proxy import WebhookProxy

        # Local development: GitHub delivers to a public channel; this thread brings them here.
        local = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        proxy = WebhookProxy(os.environ["CI_REGISTRAR_WEBHOOK_PROXY_URL"], f"http://{local}:{server.port}/webhook", log)
        proxy.start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("serving", host=host, port=server.port, threads=0 if no_worker else threads,
             queue="redis" if settings.redis_url else "sqlite", configured=settings.app_configured)
    if not settings.app_configured:
        from bot.onboarding import setup_link

        # The one place the setup token is shown: whoever reads this log may register the App.
        shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        print(f"\nNo GitHub App is configured yet. Set it up at:\n  {setup_link(settings, f'http://{shown}:{server.port}')}\n",
              flush=True)
    try:
        server.serve_forever()
    finally:
        if proxy is not None:
            proxy.stop()
        if consumer is not None:
            consumer.stop(graceful=True)
        log.info("stopped")


@click.command()
@click.option("--threads", type=int, default=DEFAULT_THREADS, show_default=True)
@click.option("--metrics-port", type=int, default=None, help="Serve this process's Prometheus metrics on this port.")
def worker(threads, metrics_port):
    """A worker process only: runs queued jobs (any number of these may share one Redis queue)."""
    from bot.logging import configure, get_logger
    from bot.queue import open_queue
    from bot.settings import load_settings

    from bot.tasks import start_reconciler

    configure()
    settings = load_settings()
    _secure_data_dir(settings)
    _migrate_if_embedded(settings)
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
def manifest(public_url):
    """Print the GitHub App manifest for a deployment at URL (to register the App by hand)."""
    from bot.onboarding import manifest_for

    click.echo(json.dumps(manifest_for(public_url), indent=2))
