"""gunicorn settings for the web process: `gunicorn -c deploy/gunicorn.conf.py` (the Procfile's web)."""

import multiprocessing
import os
import shutil
import tempfile

wsgi_app = "app:create_app()"
bind = f"{os.environ.get('HOST', '0.0.0.0')}:{os.environ.get('PORT', '3000')}"
# The webhook view does no network I/O (verify, parse, one queue write), but a client can be
# slow: with sync workers, a few connections trickling their bodies held every worker, and real
# deliveries missed GitHub's 10 s. gthread: the main loop waits for a request's first bytes (and
# hands back a connection that goes quiet), a pool of threads serves requests, and the webhook
# view reads a body within a whole-body deadline (CI_REGISTRAR_BODY_TIMEOUT_S, 5 s) -> 408.
# A slow client holds one thread (of GUNICORN_THREADS, 32 per worker) for at most that long, never
# a worker. Facing the open internet, where one client can open hundreds of connections, put a
# buffering proxy in front as well (deploy/nginx.conf): it reads whole requests before passing them.
workers = int(os.environ.get("WEB_CONCURRENCY") or multiprocessing.cpu_count() * 2)
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS") or 32)
worker_connections = 1000
keepalive = 5
timeout = 30           # GitHub gives a delivery 10 s; a request stuck for 30 s means a stuck worker
graceful_timeout = 20
max_requests = 20000   # recycle workers now and then; jitter keeps them from all restarting at once
max_requests_jitter = 2000
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")


def on_starting(server):
    # One set of metric files for all workers, so /metrics adds them up (bot/metrics.py).
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="ci-registrar-metrics-")
    path = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, exist_ok=True)


def post_fork(server, worker):
    from bot.logging import configure

    configure()


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
