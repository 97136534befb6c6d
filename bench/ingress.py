"""Ingress speed: signed pull_request deliveries acknowledged per second, against a bare Flask endpoint.

Runs the App (`app:create_app()`, embedded default: SQLite queue in a fresh data directory) under
gunicorn on loopback, sends signed deliveries from a second process at full speed for DURATION
seconds and measures acknowledged deliveries/s and p50/p99 latency; then the same for a bare Flask
endpoint that reads the body and returns 200, under the same gunicorn settings. Prints the ratio,
checks that every acknowledged delivery is in the queue, and ends with one JSON line.

    .venv/bin/python bench/ingress.py [--duration 20] [--workers 2xCPUs] [--clients 8]

BENCH_GUNICORN_CONF=path adds a gunicorn config file to both servers (e.g. to profile a worker).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import http.client
import json
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-secret"
TARGET_RATIO = 0.7


def bare_app():
    """The anchor: the least a Flask endpoint can do with a webhook (read the body, answer 200)."""
    from flask import Flask, request

    app = Flask("bare")

    @app.post("/webhook")
    def webhook():
        request.get_data()
        return "", 200

    return app


def pull_request_body(action: str = "opened") -> bytes:
    """A pull_request payload of GitHub's usual size (~25 KB: repo, users, links). `synchronize`
    (a push) is the one action the intake also notes in the store (bot/store/heads.py)."""
    user = {"login": "octocat", "id": 1, "node_id": "MDQ6VXNlcjE=", "type": "User", "site_admin": False,
            **{f"{k}_url": f"https://api.github.com/users/octocat/{k}" for k in
               ("avatar", "html", "followers", "following", "gists", "starred", "subscriptions", "organizations",
                "repos", "events", "received_events")}}
    repo = {"id": 1296269, "name": "miles", "full_name": "radixark/miles", "private": False, "owner": user,
            "default_branch": "main", "description": "x" * 200,
            **{f"{k}_url": f"https://api.github.com/repos/radixark/miles/{k}" for k in
               ("archive", "assignees", "blobs", "branches", "collaborators", "comments", "commits", "compare",
                "contents", "contributors", "deployments", "downloads", "events", "forks", "git_commits",
                "git_refs", "git_tags", "issue_comment", "issue_events", "issues", "keys", "labels", "languages",
                "merges", "milestones", "notifications", "pulls", "releases", "stargazers", "statuses",
                "subscribers", "subscription", "tags", "teams", "trees", "hooks")}}
    side = lambda sha, ref: {"label": f"radixark:{ref}", "ref": ref, "sha": sha, "user": user, "repo": repo}
    pr = {"url": "https://api.github.com/repos/radixark/miles/pulls/2480", "id": 1, "number": 2480, "state": "open",
          "title": "Enable verified ROCm tests", "body": "b" * 3000, "user": user, "draft": False,
          "head": side("a" * 40, "rocm"), "base": side("b" * 40, "main"), "author_association": "MEMBER",
          "requested_reviewers": [user, user], "labels": [], "commits": 3, "changed_files": 36,
          "updated_at": "2026-08-14T20:05:50Z"}
    return json.dumps({"action": action, "number": 2480, "pull_request": pr, "repository": repo,
                       "sender": user, "installation": {"id": 42, "node_id": "MDIz"}}).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(app_spec: str, port: int, workers: int, env: dict) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "gunicorn", app_spec, *(["-c", os.environ["BENCH_GUNICORN_CONF"]] if os.environ.get("BENCH_GUNICORN_CONF") else []), "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
           "--worker-class", "sync", "--log-level", "warning", "--pythonpath", f"{ROOT},{ROOT / 'bench'}"]
    log = tempfile.TemporaryFile()  # not a pipe: a chatty server must never block on a full one
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            conn.close()
            return proc
        except OSError:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError("gunicorn exited: " + log.read().decode(errors="replace")[-2000:])
            time.sleep(0.1)
    stop(proc)
    raise RuntimeError("gunicorn did not start")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _load(port: int, seconds: float, clients: int, out, action: str = "opened") -> None:
    """The second process: `clients` threads posting deliveries back to back; results to `out`."""
    body = pull_request_body(action)
    signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    stop_at = time.perf_counter() + seconds
    lat: list[list[float]] = [[] for _ in range(clients)]
    counts = [[0, 0] for _ in range(clients)]  # acknowledged, other

    def client(i):
        while time.perf_counter() < stop_at:
            headers = {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": str(uuid.uuid4()),
                       "X-Hub-Signature-256": signature, "Content-Type": "application/json",
                       "Content-Length": str(len(body))}
            t0 = time.perf_counter()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("POST", "/webhook", body=body, headers=headers)
                status = conn.getresponse().status
                conn.close()
            except OSError:
                counts[i][1] += 1
                continue
            lat[i].append(time.perf_counter() - t0)
            counts[i][0 if status in (200, 202) else 1] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    out.put({"elapsed": elapsed, "ok": sum(c[0] for c in counts), "errors": sum(c[1] for c in counts),
             "latencies": sorted(x for l in lat for x in l)})


def measure(port: int, seconds: float, clients: int, raw: bool = False, action: str = "opened") -> dict:
    out = mp.get_context("spawn").Queue()
    proc = mp.get_context("spawn").Process(target=_load, args=(port, seconds, clients, out, action))
    proc.start()
    result = out.get(timeout=seconds + 120)
    proc.join()
    return result if raw else combine([result])


def combine(results: list[dict]) -> dict:
    result = {"elapsed": sum(r["elapsed"] for r in results), "ok": sum(r["ok"] for r in results),
              "errors": sum(r["errors"] for r in results)}
    lat = sorted(x for r in results for x in r["latencies"])
    pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else float("nan")
    return {"per_s": result["ok"] / result["elapsed"], "acknowledged": result["ok"], "errors": result["errors"],
            "p50_ms": pct(0.50), "p99_ms": pct(0.99)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1),
                        help="gunicorn sync workers for both servers (default: 2 per core, as deploy/gunicorn.conf.py)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client threads in the sender")
    parser.add_argument("--action", default="opened", choices=["opened", "synchronize"],
                        help="the pull_request action sent (synchronize also writes the PR's head note)")
    parser.add_argument("--slice", type=float, default=5.0, help="seconds per alternating measurement slice")
    args = parser.parse_args(argv)

    data_dir = tempfile.mkdtemp(prefix="ci-registrar-bench-")
    queue_name = f"bench-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "CI_REGISTRAR_DATA_DIR": data_dir, "GITHUB_WEBHOOK_SECRET": SECRET,
           "CI_REGISTRAR_QUEUE_NAME": queue_name, "PYTHONPATH": str(ROOT)}
    for name in ("REDIS_URL", "DATABASE_URL", "GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_PRIVATE_KEY_PATH"):
        env.pop(name, None)  # the embedded default

    # Both servers run side by side and are measured in alternating slices, so that whatever
    # else the machine is doing weighs on both alike.
    procs = {}
    try:
        for label, spec in (("bare", "ingress:bare_app()"), ("app", "app:create_app()")):
            port = free_port()
            procs[label] = (start_gunicorn(spec, port, args.workers, env), port)
        warmed = {label: measure(port, 1.0, args.clients, action=args.action)["acknowledged"]  # imports, queue opened, caches
                  for label, (_, port) in procs.items()}
        slices = max(1, int(round(args.duration / args.slice)))
        parts: dict[str, list[dict]] = {"bare": [], "app": []}
        for _ in range(slices):
            for label in ("bare", "app"):
                parts[label].append(measure(procs[label][1], args.duration / slices, args.clients, raw=True, action=args.action))
    finally:
        for proc, _ in procs.values():
            stop(proc)
    figures = {label: combine(p) for label, p in parts.items()}

    sys.path.insert(0, str(ROOT))
    from bot.worker.queue import QueueConfig, open_queue
    from bot.infra.settings import load_settings

    queue = open_queue(load_settings({"CI_REGISTRAR_DATA_DIR": data_dir}),
                       config=QueueConfig(queue_name, None, os.path.join(data_dir, "queue.db"), 60))
    queued = queue.depth()
    lost = figures["app"]["acknowledged"] + warmed["app"] - queued
    ratio = figures["app"]["per_s"] / figures["bare"]["per_s"]

    for label in ("bare", "app"):
        f = figures[label]
        print(f"{label:>4}: {f['per_s']:8.1f} acknowledged/s   p50 {f['p50_ms']:6.2f} ms   p99 {f['p99_ms']:6.2f} ms"
              f"   ({f['acknowledged']} acknowledged, {f['errors']} errors)")
    print(f"ratio app/bare: {ratio:.3f} (target >= {TARGET_RATIO})")
    print(f"queued afterwards: {queued} of {figures['app']['acknowledged'] + warmed['app']} acknowledged "
          f"(warm-up included); lost: {lost}")
    result = {"bench": "ingress", "action": args.action, "duration_s": args.duration, "gunicorn_workers": args.workers,
              "clients": args.clients, "app_per_s": round(figures["app"]["per_s"], 1),
              "app_p50_ms": round(figures["app"]["p50_ms"], 3), "app_p99_ms": round(figures["app"]["p99_ms"], 3),
              "bare_per_s": round(figures["bare"]["per_s"], 1), "bare_p50_ms": round(figures["bare"]["p50_ms"], 3),
              "bare_p99_ms": round(figures["bare"]["p99_ms"], 3), "ratio": round(ratio, 3),
              "target_ratio": TARGET_RATIO, "acknowledged": figures["app"]["acknowledged"] + warmed["app"], "queued": queued,
              "lost": lost, "app_errors": figures["app"]["errors"]}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
