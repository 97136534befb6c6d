"""POST /webhook: verify, parse, de-duplicate and queue a GitHub delivery, then answer at once."""

from __future__ import annotations

import contextlib
import io
import os
import socket
import threading
import time

from flask import Blueprint, jsonify, request
from gidgethub import ValidationFailure
from gidgethub.sansio import validate_event
from werkzeug.http import parse_options_header

from bot.infra import metrics
from bot.infra import payloads
from bot.infra.logging import get_logger
from bot.web.probes import get_queue, get_settings

blueprint = Blueprint("webhooks", __name__)
log = get_logger("ci_registrar.webhooks")

MAX_BODY = 25 * 1024 * 1024  # GitHub never delivers more; anything larger is not from GitHub

NO_SECRET = "no webhook secret configured: finish onboarding or set GITHUB_WEBHOOK_SECRET"
NO_SIGNATURE = "missing X-Hub-Signature-256"
BAD_SIGNATURE = "signature does not match"
NO_EVENT = "missing X-GitHub-Event"
NO_DELIVERY = "missing X-GitHub-Delivery"
BAD_DELIVERY = "malformed X-GitHub-Delivery"
NOT_JSON = "Content-Type must be application/json"
BAD_BODY = "body is not a JSON object this App can read"
QUEUE_DOWN = "queue unavailable, delivery not accepted"
TOO_SLOW = "body not received in time"


def _body_timeout_s() -> float:
    try:
        return float(os.environ.get("CI_REGISTRAR_BODY_TIMEOUT_S") or 5)
    except ValueError:
        return 5.0


class _ReadDeadlines:
    """A whole-body deadline for every request body read (GitHub sends a delivery in one go).

    A per-read socket timeout does not stop a client that trickles a byte every few seconds; here
    one watchdog thread (per process) shuts the reading side of a socket whose body is still
    incomplete at its deadline: the blocked read returns at once and the request is answered 408.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._open: dict[int, tuple[float, socket.socket, dict]] = {}
        self._thread: threading.Thread | None = None
        self._seq = 0

    def read(self, env, length: int) -> bytes:
        """Read a declared-length body; a short or late one sets env["ci_registrar.body_timeout"]."""
        with self.guard(env) as state:
            body = env["wsgi.input"].read(length)
        if state.get("expired") or len(body) < length:
            env["ci_registrar.body_timeout"] = True
        return body

    @contextlib.contextmanager
    def guard(self, env):
        """Any body read inside the block ends by the deadline (the socket's reading side is shut)."""
        sock = env.get("gunicorn.socket") or env.get("werkzeug.socket")
        state: dict = {}
        if not isinstance(sock, socket.socket):
            yield state
            return
        with self._lock:
            self._seq += 1
            key = self._seq
            self._open[key] = (time.monotonic() + _body_timeout_s(), sock, state)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._watch, name="body-deadlines", daemon=True)
                self._thread.start()
        try:
            yield state
        finally:
            with self._lock:
                self._open.pop(key, None)
            if state.get("expired"):
                env["ci_registrar.body_timeout"] = True

    def _watch(self):
        while True:
            time.sleep(0.25)
            now = time.monotonic()
            with self._lock:
                due = [(k, v) for k, v in self._open.items() if v[0] <= now]
                for k, _ in due:
                    self._open.pop(k, None)
            for _k, (_deadline, sock, state) in due:
                state["expired"] = True
                try:
                    sock.shutdown(socket.SHUT_RD)
                except OSError:
                    pass


_deadlines = _ReadDeadlines()


def _refuse(status: int, reason: str, event: str = "", outcome: str = "rejected"):
    _count(event or "unknown", "", outcome)
    delivery = request.headers.get("X-GitHub-Delivery", "")
    log.warning("delivery refused", status=status, reason=reason,
                delivery_id=delivery[:64] if _valid_token(delivery, 64) else None)
    return jsonify(error=reason), status


def _valid_token(value: str, limit: int) -> bool:
    return (0 < len(value) <= limit and value.isascii() and value.isprintable()
            and " " not in value and '"' not in value and "\\" not in value)


def _body(req, env) -> bytes:
    """The raw body: read straight from the WSGI stream when its length is declared (and checked)."""
    length = env.get("CONTENT_LENGTH")
    if length and length.isascii() and length.isdigit() and "HTTP_TRANSFER_ENCODING" not in env:
        # At most MAX_BODY (checked above), within the body deadline; a short body is answered 408.
        return _deadlines.read(env, int(length))
    with _deadlines.guard(env):  # chunked or odd: werkzeug's stream, 413 past MAX_CONTENT_LENGTH
        return req.get_data(cache=False)


def _json_utf8(content_type: str) -> str | None:
    """None when Content-Type is JSON in UTF-8, else the refusal's reason (werkzeug parses odd ones)."""
    if content_type == "application/json":  # what GitHub sends
        return None
    mimetype, params = parse_options_header(content_type)
    if mimetype.lower() != "application/json":
        return NOT_JSON
    charset = params.get("charset")
    if charset and charset.lower().replace("_", "-") not in ("utf-8", "utf8"):
        return "charset must be UTF-8"
    return None


class _Refused(Exception):
    def __init__(self, status: int, reason: str, event: str = "", outcome: str = "rejected", record: bool = False):
        super().__init__(reason)
        self.status, self.reason, self.event, self.outcome = status, reason, event, outcome
        self.record = record  # a signed delivery GitHub sent: kept in the store's deliveries too


def _verified(env, body: bytes, secret: str) -> tuple[str, str, str]:
    """(event, delivery id, action) of a delivery that passes every check, in this order; else _Refused."""
    # The signature first: nothing else about an unsigned request is looked at.
    signature = env.get("HTTP_X_HUB_SIGNATURE_256")
    if not signature:
        raise _Refused(401, NO_SIGNATURE)
    if not (signature.startswith("sha256=") and signature.isascii()):
        raise _Refused(401, BAD_SIGNATURE)
    try:
        # gidgethub's sansio layer: HMAC-SHA256 over the raw bytes, compared in constant time.
        # The legacy sha1 header is never offered to it.
        validate_event(body, signature=signature, secret=secret)
    except ValidationFailure:
        raise _Refused(401, BAD_SIGNATURE) from None

    event_name = env.get("HTTP_X_GITHUB_EVENT", "")
    delivery_id = env.get("HTTP_X_GITHUB_DELIVERY", "")
    if not event_name:
        raise _Refused(400, NO_EVENT, outcome="invalid")
    if not _valid_token(event_name, 64):
        raise _Refused(400, "malformed X-GitHub-Event", outcome="invalid")
    if not delivery_id:
        raise _Refused(400, NO_DELIVERY, event_name, outcome="invalid")
    if not _valid_token(delivery_id, 64):
        raise _Refused(400, BAD_DELIVERY, event_name, outcome="invalid")
    bad_type = _json_utf8(env.get("CONTENT_TYPE", ""))
    if bad_type:
        raise _Refused(400, bad_type, event_name, outcome="invalid")
    try:
        # The worker's own decoder (bot.infra.payloads.decode): a body accepted here is one the worker
        # can read; one it could not (invalid UTF-8, a huge integer, deep nesting) is refused now,
        # with a 400 GitHub shows in the delivery's log, instead of vanishing later.
        data = payloads.decode(body)
    except payloads.PayloadError as exc:
        raise _Refused(400, f"{BAD_BODY}: {str(exc)[:120]}", event_name, outcome="invalid") from None
    try:
        # Then its schema: the fields its handler reads (bot.infra.payloads.SCHEMAS), present and in the
        # bounds the store holds. A payload that fails is answered 400 with the reason now, never
        # queued to fail later (or to reach a 500 in the head-note path after it was queued,
        # which made GitHub's redelivery a "duplicate").
        envelope = payloads.validate(event_name, data)
    except payloads.PayloadError as exc:
        raise _Refused(400, f"invalid payload: {str(exc)[:200]}", event_name, outcome="invalid", record=True) from None
    env["ci_registrar.payload"] = data
    return event_name, delivery_id, envelope.action or ""


def _record_refusal(env, refused: _Refused) -> None:
    """A signed delivery refused for its payload: its id and reason go to the store's deliveries
    (status `invalid`, shown on the status page) through the queue, as the intake writes no store
    row itself. Best effort: the 400 and the log line already say why."""
    try:
        get_queue().record_refusal(env.get("HTTP_X_GITHUB_DELIVERY", ""), refused.event, refused.reason)
    except Exception as exc:  # noqa: BLE001 - the answer must not depend on it
        log.warning("could not queue the refusal's record", error=type(exc).__name__)


def _note_head(app, env, event_name: str, action: str) -> None:
    """A push to a PR (`synchronize`), handed to the head-note buffer (bot/store/heads.py, written
    off this path): a job of an older push still queued behind it then stops before spending a
    call. Every other delivery costs two comparisons here."""
    if event_name != "pull_request" or action != "synchronize":
        return
    from bot.store import heads

    try:
        heads.note_delivery(get_settings(app).database_url, event_name, env.get("ci_registrar.payload") or {})
    except Exception as exc:  # noqa: BLE001 - queued already: only the saving is lost, never a 500
        log.warning("could not note the PR's head", error=type(exc).__name__)


@blueprint.post("/webhook")
def webhook():
    # The request object and its environ are looked up once, not per header.
    req = request._get_current_object()
    env = req.environ
    if req.content_length is not None and req.content_length > MAX_BODY:
        return _refuse(413, "payload over 25 MB", outcome="invalid")
    secret = get_settings().webhook_secret
    if not secret:
        return _refuse(503, NO_SECRET)
    body = _body(req, env)
    if env.get("ci_registrar.body_timeout"):
        return _refuse(408, TOO_SLOW, outcome="invalid")
    try:
        event_name, delivery_id, action = _verified(env, body, secret)
    except _Refused as refused:
        if refused.record:
            _record_refusal(env, refused)
        return _refuse(refused.status, refused.reason, refused.event, refused.outcome)

    if event_name == "ping":
        _count("ping", "", "ping")
        return jsonify(status="pong"), 200

    try:
        failed = env.get("ci_registrar.queue_error")
        if failed is not None:
            raise failed
        fresh = get_queue().enqueue_delivery(delivery_id, event_name, body)
    except Exception as exc:
        log.error("queue write failed", delivery_id=delivery_id, error=type(exc).__name__)
        return _refuse(503, QUEUE_DOWN, event_name, outcome="queue_error")
    if not fresh:
        _count(event_name, action, "duplicate")
        return _answer(200, "duplicate", delivery_id)
    _note_head(None, env, event_name, action)
    _count(event_name, action, "accepted")
    return _answer(202, "queued", delivery_id)


class IngressFastPath:
    """WSGI middleware: POST /webhook deliveries that pass every check, queued without Flask's
    per-request machinery (request context, URL matching, response object).

    The checks and the queue write are the view's own (_verified, enqueue_delivery): signature
    first, then headers, then the body. Everything else -- any refusal, ping, a queue error, no
    secret, a chunked, undeclared or oversized body -- goes to the Flask view unchanged, with the
    body already read handed back to it, so every refusal is answered, logged and counted by the
    view exactly as before, and once.
    """

    def __init__(self, app, wsgi_app):
        self.app = app
        self.wsgi_app = wsgi_app

    def __call__(self, env, start_response):
        if env.get("PATH_INFO") != "/webhook" or env.get("REQUEST_METHOD") != "POST":
            return self.wsgi_app(env, start_response)
        length = env.get("CONTENT_LENGTH")
        if not (length and length.isascii() and length.isdigit()) or "HTTP_TRANSFER_ENCODING" in env \
                or int(length) > MAX_BODY:
            return self.wsgi_app(env, start_response)
        secret = get_settings(self.app).webhook_secret
        if not secret:
            return self.wsgi_app(env, start_response)
        body = _deadlines.read(env, int(length))
        if env.get("ci_registrar.body_timeout"):
            env["wsgi.input"] = io.BytesIO(body)  # the view answers 408 (flag set in env)
            env["CONTENT_LENGTH"] = str(len(body))
            return self.wsgi_app(env, start_response)
        try:
            event_name, delivery_id, action = _verified(env, body, secret)
            if event_name == "ping":
                raise _Refused(200, "ping")
        except Exception:
            # Not a delivery to queue here: the view answers it.
            env["wsgi.input"] = io.BytesIO(body)
            return self.wsgi_app(env, start_response)
        try:
            fresh = get_queue(self.app).enqueue_delivery(delivery_id, event_name, body)
        except Exception as exc:
            # The view answers 503 without writing again: behind a network partition each try
            # waits out the queue's timeout, and GitHub gives a delivery 10 s in all.
            env["ci_registrar.queue_error"] = exc
            env["wsgi.input"] = io.BytesIO(body)
            return self.wsgi_app(env, start_response)
        if fresh:
            _note_head(self.app, env, event_name, action)
            _count(event_name, action, "accepted")
            status, answer = "202 ACCEPTED", b'{"delivery":"%s","status":"queued"}' % delivery_id.encode()
        else:
            _count(event_name, action, "duplicate")
            status, answer = "200 OK", b'{"delivery":"%s","status":"duplicate"}' % delivery_id.encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(answer)))])
        return [answer]


_counters: dict = {}


def _count(event: str, action: str, outcome: str) -> None:
    key = (event, action, outcome)
    counter = _counters.get(key)
    if counter is None:
        counter = _counters[key] = metrics.DELIVERIES.labels(event, action, outcome)
    counter.inc()


def _answer(status: int, word: str, delivery_id: str):
    # Built by hand: this is the hot path, and delivery ids are checked printable ASCII without quotes.
    body = b'{"delivery":"%s","status":"%s"}' % (delivery_id.encode(), word.encode())
    return body, status, {"Content-Type": "application/json"}


@blueprint.errorhandler(413)
def too_large(_exc):
    return _refuse(413, "payload over 25 MB", outcome="invalid")

