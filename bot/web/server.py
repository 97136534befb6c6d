"""The production HTTP server of `ci-registrar serve`: gunicorn, run in-process, with its settings.

`serve` is what `make run`, the Docker image, the Procfile and compose all start, so there is one
server path and one first-run output. gunicorn's master binds the address and prints the set-up
link while no App is configured; each web worker process builds the Flask app after the fork and,
unless `--no-worker`, runs the job threads too.

Why these settings: the webhook view does no network I/O (verify, parse, one queue write), but a
client can be slow. With sync workers a few connections trickling their bodies held every worker,
and real deliveries missed GitHub's 10 s. gthread: the main loop waits for a request's first bytes
(and hands back a connection that goes quiet), a pool of threads serves requests, and the webhook
view reads a body within a whole-body deadline (CI_REGISTRAR_BODY_TIMEOUT_S, 5 s) -> 408. A slow
client holds one thread (of GUNICORN_THREADS, 32 per worker) for at most that long, never a
worker. Facing the open internet, where one client can open hundreds of connections, put a
buffering proxy in front as well (deploy/nginx.conf): it reads whole requests before passing them.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
import tempfile
import threading
import time

from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger

from bot.infra.logging import configure, get_logger, path_only
from bot.infra.settings import env_float

DEFAULT_HOST = "127.0.0.1"  # the Docker image and the Procfile say 0.0.0.0 themselves
DEFAULT_PORT = 3000
SETUP_BANNER = "\nNo GitHub App is configured yet. Set it up at:\n  {link}\n"


def shutdown_grace_s() -> float:
    """How long SIGTERM waits for running jobs; a job still running then is cut off (it comes back
    on the next start, counted as an interruption) and the process exits."""
    return env_float("CI_REGISTRAR_SHUTDOWN_GRACE_S", 20)


def bind_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def shown_host(host: str) -> str:
    """Where a person on this machine reaches a service bound to `host`."""
    return "127.0.0.1" if host in ("0.0.0.0", "::", "", "[::]") else host


def settings_for(host: str, port: int, *, jobs: int) -> dict:
    """gunicorn's settings for `serve`: `jobs` job threads per web worker (0: HTTP only)."""
    default_workers = 1 if jobs else multiprocessing.cpu_count() * 2
    workers = int(os.environ.get("WEB_CONCURRENCY") or default_workers)
    return {
        "bind": [bind_address(host, port)],
        "workers": workers,
        "worker_class": "gthread",
        "threads": int(os.environ.get("GUNICORN_THREADS") or 32),
        "worker_connections": 1000,
        "keepalive": 5,
        "timeout": 30,  # GitHub gives a delivery 10 s; a request stuck for 30 s means a stuck worker
        # Running jobs get the grace period (then they are cut off and come back on the next start);
        # gunicorn kills a worker only after that.
        "graceful_timeout": int(shutdown_grace_s() + (10 if jobs else 0) + 0.999),
        # Recycle web-only workers now and then (jitter: not all at once); a worker running jobs is
        # never recycled under them.
        "max_requests": 0 if jobs else 20000,
        "max_requests_jitter": 0 if jobs else 2000,
        "forwarded_allow_ips": os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1"),
        "accesslog": None if os.environ.get("CI_REGISTRAR_ACCESS_LOG", "on").lower() in ("off", "0", "false")
        else "-",
        "errorlog": "-",
        "logger_class": JsonLogger,
        "proc_name": "ci-registrar",
        "control_socket_disable": True,  # gunicorn 25+ would open one in $HOME: nothing here uses it
        "on_starting": on_starting,
        "when_ready": when_ready,
        "post_worker_init": post_worker_init,
        "worker_exit": worker_exit,
        "child_exit": child_exit,
        "on_exit": on_exit,
    }


class JsonLogger(Logger):
    """gunicorn's own lines and its access log as this service's JSON lines; an access line names
    the path only (a query string can hold the setup token or an OAuth code)."""

    def setup(self, cfg):
        super().setup(cfg)
        configure()
        for log in (self.error_log, self.access_log):
            log.handlers[:] = []
            log.propagate = True

    def access(self, resp, req, environ, request_time):
        if not self.access_log_enabled:
            return
        status = getattr(resp, "status_code", None) or str(getattr(resp, "status", "") or "").split(" ")[0]
        get_logger("ci_registrar.access").info(
            "request", method=environ.get("REQUEST_METHOD"), path=path_only(environ.get("RAW_URI") or
                                                                           environ.get("PATH_INFO") or ""),
            status=int(status) if str(status).isdigit() else status,
            duration_ms=round(request_time.total_seconds() * 1000, 1), remote=environ.get("REMOTE_ADDR"))


# -- hooks (each runs in the process its gunicorn name says) -------------------------------------
_jobs: dict = {}


def on_starting(server):
    # Several workers: one set of metric files for all, so /metrics adds them up (bot/infra/metrics.py).
    if server.cfg.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="ci-registrar-metrics-")
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if path:
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path, exist_ok=True)


def when_ready(server):
    """The master has bound its address: say so, and give the set-up link while there is no App."""
    from bot.infra.settings import load_settings

    settings = load_settings()
    host, _, port = server.cfg.bind[0].rpartition(":")
    host = host.strip("[]")
    jobs = server.app.jobs
    get_logger("ci_registrar.serve").info(
        "serving", host=host, port=int(port), web_workers=server.cfg.workers, threads=jobs,
        queue="redis" if settings.redis_url else "sqlite", configured=settings.app_configured)
    if server.app.proxy_url:
        from bot.web.proxy import WebhookProxy

        # Local development: GitHub delivers to a public channel; this thread brings them here.
        proxy = WebhookProxy(server.app.proxy_url, f"http://{shown_host(host)}:{port}/webhook",
                             get_logger("ci_registrar.proxy"))
        proxy.start()
        _jobs["proxy"] = proxy
    if not settings.app_configured:
        from bot.web.onboarding import setup_link

        # The one place the setup token is shown: whoever reads this may register the App (once:
        # the link is spent when opened).
        print(SETUP_BANNER.format(link=setup_link(settings, f"http://{shown_host(host)}:{port}")), flush=True)


def post_worker_init(worker):
    """A web worker: the Flask app is loaded; start its job threads (the embedded default)."""
    jobs = worker.app.jobs
    if not jobs:
        return
    from bot.worker.tasks import start_reconciler
    from bot.web.probes import get_queue

    queue = get_queue(worker.wsgi)
    queue.runtime.share_threads(jobs)  # one installation never holds every thread
    queue.runtime.share_analysis_slots()  # and never every analysis slot, in any process
    # Poll at most every 0.5 s when idle; stop() waits out running jobs for the grace period.
    consumer = queue.create_consumer(workers=jobs, worker_type="thread", periodic=True, initial_delay=0.05,
                                     backoff=1.5, max_delay=0.5, check_worker_health=True,
                                     shutdown_timeout=shutdown_grace_s())
    # huey's start() takes SIGTERM, SIGINT and SIGHUP for itself: gunicorn's worker keeps them
    # (its SIGTERM ends the loop, then worker_exit stops the jobs).
    kept = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    consumer.start()
    for signum, handler in kept.items():
        signal.signal(signum, handler)
    consumer.supervise()  # start() has no health check of its own: a dead job thread is replaced
    worker.wsgi.extensions["ci_registrar.consumer"] = consumer  # /readyz: no live job thread, not ready
    start_reconciler(queue.runtime)
    _jobs["consumer"] = consumer


def worker_exit(server, worker):
    consumer = _jobs.pop("consumer", None)
    if consumer is None:
        return
    t0 = time.monotonic()
    consumer.stop(graceful=True)
    stuck = [t.name for t in threading.enumerate() if t.name.startswith("Worker-") and t.is_alive()]
    get_logger("ci_registrar.serve").info("jobs stopped", waited_s=round(time.monotonic() - t0, 1), cut_off=stuck)
    if stuck:
        # A job still running after the grace period: its message comes back (lease) on the next
        # start, counted as an interruption. Nothing it holds may keep this process alive.
        logging.shutdown()
        os._exit(0)


def child_exit(server, worker):
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    proxy = _jobs.pop("proxy", None)
    if proxy is not None:
        proxy.stop()
    get_logger("ci_registrar.serve").info("stopped")


class Service(BaseApplication):
    """gunicorn with these settings, serving `app:create_app()` built in each worker."""

    def __init__(self, options: dict, *, jobs: int, proxy_url: str | None = None):
        self.options, self.jobs, self.proxy_url = options, jobs, proxy_url
        super().__init__()

    def load_config(self):
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self):
        from bot.web.webapp import create_app

        return create_app()


def run(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, jobs: int, proxy_url: str | None = None) -> None:
    Service(settings_for(host, port, jobs=jobs), jobs=jobs, proxy_url=proxy_url).run()
