"""The webhook proxy channel for local development: deliveries read from a channel (server-sent
events, as smee.io serves them) reach the App's /webhook with their signature, and are verified there."""

from __future__ import annotations

import json
import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bot.web.proxy import WebhookProxy, delivery_of, events
from tests.simulator import sign
from tests.simulator.fixtures import github_sim  # noqa: F401
from tests.service_support import build_world, wait_for


class Channel:
    """A loopback channel: GET streams `: keep-alive`, a ready event, then whatever the test publishes."""

    def __init__(self):
        self.outbox: queue.Queue = queue.Queue()
        channel = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(b": keep-alive\n\nevent: ready\ndata: {}\n\n")
                self.wfile.flush()
                while True:
                    item = channel.outbox.get()
                    if item is None:
                        return
                    self.wfile.write(b"data: " + json.dumps(item).encode() + b"\n\n")
                    self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/channel"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def publish(self, headers: dict, body: bytes, raw: bool):
        event = {k.lower(): v for k, v in headers.items()}
        event["body"] = json.loads(body)
        if raw:
            event["rawBody"] = body.decode()
        self.outbox.put(event)

    def close(self):
        self.outbox.put(None)
        self.server.shutdown()


@pytest.fixture()
def served(github_sim, tmp_path):
    from werkzeug.serving import make_server

    world = build_world(github_sim, tmp_path)
    httpd = make_server("127.0.0.1", 0, world.flask, threaded=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    channel = Channel()
    proxy = WebhookProxy(channel.url, f"http://127.0.0.1:{httpd.server_port}/webhook", read_timeout_s=10)
    proxy.start()
    yield world, channel, proxy
    proxy.stop()
    channel.close()
    httpd.shutdown()


@pytest.mark.parametrize("raw", [True, False], ids=["raw-body", "parsed-body"])
def test_a_delivery_on_the_channel_is_queued_by_the_app(served, raw):
    world, channel, proxy = served
    d = world.sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=world.pr, sender="bob")
    body = d.body if raw else json.dumps(d.payload, separators=(",", ":")).encode()  # GitHub sends compact JSON
    headers = dict(d.headers, **({} if raw else {"X-Hub-Signature-256": sign(body, world.app.webhook_secret)}))
    channel.publish(headers, body, raw)
    assert wait_for(lambda: world.queue.depth() == 1)
    # The App answers (and queues) before the forwarder counts the delivery: wait for both.
    assert wait_for(lambda: proxy.forwarded == 1)


def test_a_forged_delivery_on_the_channel_is_refused_by_the_app(served):
    world, channel, proxy = served
    d = world.sim.webhook("pull_request", "opened", app=world.app, repo=world.repo, pull=world.pr, sender="bob")
    channel.publish(dict(d.headers, **{"X-Hub-Signature-256": sign(d.body, "not the secret")}), d.body, raw=True)
    assert wait_for(lambda: proxy.forwarded == 1)
    assert world.queue.depth() == 0


def test_events_and_deliveries_are_read_as_the_channel_writes_them():
    lines = [": ping", "event: ready", "data: {}", "", "data: {\"a\":", "data: 1}", "", "id: 7", "data: x", ""]
    assert list(events(iter(lines))) == [("ready", "{}"), ("message", '{"a":\n1}'), ("message", "x")]
    assert delivery_of({"body": {}}) is None  # no event header: not a delivery
    headers, body = delivery_of({"x-github-event": "ping", "x-hub-signature-256": "sha256=1", "body": {"zen": "é"},
                                 "host": "smee.io"})
    assert body == '{"zen":"é"}'.encode() and "host" not in headers and headers["content-type"] == "application/json"
