"""A webhook proxy channel for local development, as Probot's smee.io client: GitHub cannot reach a
laptop, so it delivers to a public channel, and this forwarder reads the channel as server-sent
events and posts each delivery to the local /webhook, headers and signature included.

Set CI_REGISTRAR_WEBHOOK_PROXY_URL to the channel (for example a new https://smee.io channel);
`ci-registrar serve` then starts the forwarder, and onboarding registers the App with the channel
as its webhook URL. The local endpoint verifies every forwarded delivery exactly as a direct one:
the channel is trusted with nothing. For development only: a production App receives its webhooks
directly (CI_REGISTRAR_PUBLIC_URL).

A channel event is a JSON object of the delivery's headers (lower-case names) and its `body` (the
payload, parsed); the raw body is used when the channel keeps one (`rawBody`), otherwise the
payload is written back as compact JSON, which is what GitHub sends.
"""

from __future__ import annotations

import json
import threading

import requests

FORWARDED_HEADERS = ("x-github-event", "x-github-delivery", "x-hub-signature-256", "x-hub-signature",
                     "x-github-hook-id", "x-github-hook-installation-target-type",
                     "x-github-hook-installation-target-id", "content-type", "user-agent")


def delivery_of(event: dict) -> tuple[dict, bytes] | None:
    """(headers, body) of one channel event, or None when it carries no delivery (a ready or ping)."""
    if not isinstance(event, dict) or "body" not in event and "rawBody" not in event:
        return None
    headers = {name: str(event[name]) for name in FORWARDED_HEADERS if isinstance(event.get(name), (str, int))}
    if "x-github-event" not in headers:
        return None
    raw = event.get("rawBody")
    if isinstance(raw, str):
        body = raw.encode()
    else:
        body = json.dumps(event.get("body"), separators=(",", ":"), ensure_ascii=False).encode()
    headers.setdefault("content-type", "application/json")
    return headers, body


def events(lines):
    """Server-sent events from an iterator of text lines: (event name, data) pairs."""
    name, data = "message", []
    for line in lines:
        if line is None:
            continue
        if line == "":
            if data:
                yield name, "\n".join(data)
            name, data = "message", []
        elif line.startswith(":"):
            continue  # a comment: the channel's keep-alive
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)


class WebhookProxy(threading.Thread):
    """Reads a channel and forwards its deliveries to `target` (the local /webhook), reconnecting."""

    def __init__(self, channel_url: str, target: str, log=None, *, read_timeout_s: float = 90.0):
        super().__init__(name="webhook-proxy", daemon=True)
        self.channel_url, self.target, self.log = channel_url, target, log
        self.read_timeout_s = read_timeout_s
        self.forwarded = 0
        self._stop_event = threading.Event()
        self._session = requests.Session()

    def stop(self) -> None:
        self._stop_event.set()
        self._session.close()

    def _note(self, message: str, **fields) -> None:
        if self.log is not None:
            self.log.info(message, **fields)

    def run(self) -> None:
        backoff = 1.0
        while not self._stop_event.is_set():
            try:
                with self._session.get(self.channel_url, stream=True, timeout=(10, self.read_timeout_s),
                                       headers={"Accept": "text/event-stream"}) as stream:
                    stream.raise_for_status()
                    self._note("webhook proxy connected", channel=self.channel_url)
                    backoff = 1.0
                    # chunk_size=1: an event is handled when its blank line arrives, not when 512 bytes have
                    for name, data in events(stream.iter_lines(chunk_size=1, decode_unicode=True)):
                        if self._stop_event.is_set():
                            return
                        if name not in ("message", ""):
                            continue
                        self.forward(data)
            except (requests.RequestException, ValueError) as exc:
                if self._stop_event.is_set():
                    return
                self._note("webhook proxy reconnecting", error=type(exc).__name__, wait_s=backoff)
            self._stop_event.wait(backoff)
            backoff = min(backoff * 2, 30.0)

    def forward(self, data: str) -> int | None:
        try:
            found = delivery_of(json.loads(data))
        except ValueError:
            return None
        if found is None:
            return None
        headers, body = found
        try:
            status = requests.post(self.target, data=body, headers=headers, timeout=15).status_code
        except requests.RequestException as exc:
            self._note("webhook proxy could not forward", error=type(exc).__name__)
            return None
        self.forwarded += 1
        # `github_event`: structlog's own first argument is called `event`.
        self._note("webhook forwarded", github_event=headers.get("x-github-event"), status=status,
                   delivery_id=headers.get("x-github-delivery"))
        return status

