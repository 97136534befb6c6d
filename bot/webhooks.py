"""POST /webhook: verify, parse, de-duplicate and queue a GitHub delivery, then answer at once."""

from __future__ import annotations

import msgspec
from flask import Blueprint, jsonify, request
from gidgethub import ValidationFailure
from gidgethub.sansio import validate_event
from werkzeug.http import parse_options_header

from bot import metrics
from bot.logging import get_logger
from bot.web import get_queue, get_settings

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
BAD_BODY = "body is not a JSON object"
QUEUE_DOWN = "queue unavailable, delivery not accepted"


class _Envelope(msgspec.Struct):
    action: object = None


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
        # At most MAX_BODY (checked above); a short body simply fails the signature check.
        return env["wsgi.input"].read(int(length))
    return req.get_data(cache=False)  # chunked or odd: werkzeug's stream, 413 past MAX_CONTENT_LENGTH


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


@blueprint.post("/webhook")
def webhook():
    # The hot path: the request object and its environ are looked up once, not per header.
    req = request._get_current_object()
    env = req.environ
    if req.content_length is not None and req.content_length > MAX_BODY:
        return _refuse(413, "payload over 25 MB", outcome="invalid")
    secret = get_settings().webhook_secret
    if not secret:
        return _refuse(503, NO_SECRET)
    body = _body(req, env)

    # The signature first: nothing else about an unsigned request is looked at.
    signature = env.get("HTTP_X_HUB_SIGNATURE_256")
    if not signature:
        return _refuse(401, NO_SIGNATURE)
    if not (signature.startswith("sha256=") and signature.isascii()):
        return _refuse(401, BAD_SIGNATURE)
    try:
        # gidgethub's sansio layer: HMAC-SHA256 over the raw bytes, compared in constant time.
        # The legacy sha1 header is never offered to it.
        validate_event(body, signature=signature, secret=secret)
    except ValidationFailure:
        return _refuse(401, BAD_SIGNATURE)

    event_name = env.get("HTTP_X_GITHUB_EVENT", "")
    delivery_id = env.get("HTTP_X_GITHUB_DELIVERY", "")
    if not event_name:
        return _refuse(400, NO_EVENT, outcome="invalid")
    if not _valid_token(event_name, 64):
        return _refuse(400, "malformed X-GitHub-Event", outcome="invalid")
    if not delivery_id:
        return _refuse(400, NO_DELIVERY, event_name, outcome="invalid")
    if not _valid_token(delivery_id, 64):
        return _refuse(400, BAD_DELIVERY, event_name, outcome="invalid")
    bad_type = _json_utf8(env.get("CONTENT_TYPE", ""))
    if bad_type:
        return _refuse(400, bad_type, event_name, outcome="invalid")
    try:
        # The whole body is checked to be one JSON object, but only `action` is built into Python
        # objects here: the worker parses the rest (msgspec skips the other fields' objects).
        envelope = msgspec.json.decode(body, type=_Envelope)
    except msgspec.DecodeError:
        return _refuse(400, BAD_BODY, event_name, outcome="invalid")
    action = envelope.action if isinstance(envelope.action, str) and len(envelope.action) <= 64 else ""

    if event_name == "ping":
        _count("ping", "", "ping")
        return jsonify(status="pong"), 200

    try:
        fresh = get_queue().enqueue_delivery(delivery_id, event_name, body)
    except Exception as exc:
        log.error("queue write failed", delivery_id=delivery_id, error=type(exc).__name__)
        return _refuse(503, QUEUE_DOWN, event_name, outcome="queue_error")
    if not fresh:
        _count(event_name, action, "duplicate")
        return _answer(200, "duplicate", delivery_id)
    _count(event_name, action, "accepted")
    return _answer(202, "queued", delivery_id)


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

