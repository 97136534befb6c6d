"""POST /webhook: a delivery is verified, de-duplicated and queued; bad input never gets a 5xx."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from app import create_app
from bot.worker.queue import QueueConfig, open_queue
from bot.infra.settings import load_settings

SECRET = "It's a Secret to Everybody"


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def make_app(tmp_path, secret=SECRET):
    env = {"CI_REGISTRAR_DATA_DIR": str(tmp_path)}
    if secret:
        env["GITHUB_WEBHOOK_SECRET"] = secret
    settings = load_settings(env)
    queue = open_queue(settings, config=QueueConfig(f"t-{uuid.uuid4().hex[:8]}", None, str(tmp_path / "queue.db"), 30))
    return create_app(settings, queue=queue), queue


@pytest.fixture()
def app_queue(tmp_path):
    return make_app(tmp_path)


def headers(body: bytes, event="pull_request", delivery=None, **extra):
    h = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
         "Content-Type": "application/json", "X-Hub-Signature-256": sign(body)}
    h.update(extra)
    return {k: v for k, v in h.items() if v is not None}


BODY = json.dumps({"action": "opened", "number": 1, "installation": {"id": 7},
                   "repository": {"full_name": "radixark/miles"},
                   "pull_request": {"number": 1, "head": {"sha": "a" * 40}, "base": {"sha": "b" * 40}}}).encode()


def test_the_documented_signature_example_matches():
    # GitHub's own test vector (docs: "Validating webhook deliveries", secret "It's a Secret to Everybody").
    assert sign(b"Hello, World!") == "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_a_signed_delivery_is_queued_and_answered_202(app_queue):
    app, queue = app_queue
    resp = app.test_client().post("/webhook", data=BODY, headers=headers(BODY, delivery="d-1"))
    assert resp.status_code == 202
    assert resp.json == {"status": "queued", "delivery": "d-1"}
    assert queue.depth() == 1


def test_a_redelivery_is_acknowledged_and_not_queued_again(app_queue):
    app, queue = app_queue
    client = app.test_client()
    h = headers(BODY, delivery="same-id")
    assert client.post("/webhook", data=BODY, headers=h).status_code == 202
    again = client.post("/webhook", data=BODY, headers=h)
    assert again.status_code == 200 and again.json["status"] == "duplicate"
    assert queue.depth() == 1


def test_a_failed_delivery_may_be_redelivered(app_queue):
    app, queue = app_queue
    client = app.test_client()
    h = headers(BODY, delivery="retry-me")
    client.post("/webhook", data=BODY, headers=h)
    queue.forget_delivery("retry-me")
    assert client.post("/webhook", data=BODY, headers=h).status_code == 202
    assert queue.depth() == 2


@pytest.mark.parametrize("signature", [None, "", "sha256=" + "0" * 64, "sha1=" + "0" * 40, "garbage",
                                       sign(BODY, "wrong secret"), "sha256=é"])
def test_forged_or_missing_signatures_are_401_and_nothing_is_queued(app_queue, signature):
    app, queue = app_queue
    resp = app.test_client().post("/webhook", data=BODY, headers=headers(BODY, **{"X-Hub-Signature-256": signature}))
    assert resp.status_code == 401
    assert queue.depth() == 0


def test_the_legacy_sha1_signature_alone_is_not_enough(app_queue):
    app, queue = app_queue
    sha1 = "sha1=" + hmac.new(SECRET.encode(), BODY, hashlib.sha1).hexdigest()
    resp = app.test_client().post("/webhook", data=BODY, headers=headers(
        BODY, **{"X-Hub-Signature-256": None, "X-Hub-Signature": sha1}))
    assert resp.status_code == 401
    resp = app.test_client().post("/webhook", data=BODY, headers=headers(BODY, **{"X-Hub-Signature-256": sha1}))
    assert resp.status_code == 401
    assert queue.depth() == 0


@pytest.mark.parametrize("change, reason", [
    ({"X-GitHub-Event": None}, "X-GitHub-Event"),
    ({"X-GitHub-Delivery": None}, "X-GitHub-Delivery"),
    ({"Content-Type": "text/plain"}, "Content-Type"),
    ({"Content-Type": None}, "Content-Type"),
])
def test_missing_headers_and_wrong_content_type_are_400_with_a_reason(app_queue, change, reason):
    app, queue = app_queue
    resp = app.test_client().post("/webhook", data=BODY, headers=headers(BODY, **change))
    assert resp.status_code == 400
    assert reason in resp.json["error"]
    assert queue.depth() == 0


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"\xff\xfe", b"", b'"text"'])
def test_a_malformed_body_is_400(app_queue, body):
    app, queue = app_queue
    resp = app.test_client().post("/webhook", data=body, headers=headers(body))
    assert resp.status_code == 400
    assert queue.depth() == 0


def test_an_unknown_charset_is_400(app_queue):
    app, _ = app_queue
    resp = app.test_client().post("/webhook", data=BODY, headers=headers(BODY, **{"Content-Type": "application/json; charset=nope"}))
    assert resp.status_code == 400


def test_over_25_mb_is_413(app_queue):
    app, queue = app_queue
    body = b"{" + b" " * (25 * 1024 * 1024) + b"}"
    resp = app.test_client().post("/webhook", data=body, headers=headers(body))
    assert resp.status_code == 413
    assert queue.depth() == 0


def test_ping_is_answered_and_not_queued(app_queue):
    app, queue = app_queue
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
    resp = app.test_client().post("/webhook", data=body, headers=headers(body, event="ping"))
    assert resp.status_code == 200 and resp.json["status"] == "pong"
    assert queue.depth() == 0


def test_without_a_secret_every_delivery_is_refused(tmp_path):
    app, queue = make_app(tmp_path, secret=None)
    resp = app.test_client().post("/webhook", data=BODY, headers=headers(BODY))
    assert resp.status_code == 503
    assert "secret" in resp.json["error"]
    assert queue.depth() == 0


def test_an_unreachable_queue_is_503_not_500(app_queue, monkeypatch):
    app, queue = app_queue

    def broken(*_a):
        raise OSError("disk gone")

    monkeypatch.setattr(queue.storage, "enqueue_unique", broken)
    resp = app.test_client().post("/webhook", data=BODY, headers=headers(BODY))
    assert resp.status_code == 503


def test_deliveries_are_counted_by_event_action_and_outcome(app_queue):
    app, _ = app_queue
    client = app.test_client()
    client.post("/webhook", data=BODY, headers=headers(BODY, event="check_suite"))
    client.post("/webhook", data=BODY, headers=headers(BODY, event="check_suite", **{"X-Hub-Signature-256": "sha256=x"}))
    text = client.get("/metrics").data.decode()
    assert 'ci_registrar_deliveries_total{action="opened",event="check_suite",outcome="accepted"}' in text
    assert 'outcome="rejected"' in text
    assert "ci_registrar_queue_depth" in text


# -- fuzzing -------------------------------------------------------------------------------------
header_text = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=255, blacklist_characters="\x7f"), max_size=80)
bodies = st.one_of(
    st.binary(max_size=512),
    st.builds(lambda d: json.dumps(d).encode(), st.dictionaries(st.text(max_size=10), st.one_of(
        st.none(), st.integers(), st.text(max_size=20), st.lists(st.integers(), max_size=3)), max_size=5)),
    st.just(BODY),
)


@st.composite
def deliveries(draw):
    body = draw(bodies)
    kind = draw(st.sampled_from(["valid", "missing", "random", "wrong-secret", "sha1", "empty"]))
    signature = {
        "valid": sign(body), "missing": None, "random": draw(header_text), "wrong-secret": sign(body, "x"),
        "sha1": "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest(), "empty": "",
    }[kind]
    h = {
        "X-Hub-Signature-256": signature,
        "X-GitHub-Event": draw(st.one_of(st.none(), header_text, st.sampled_from(["pull_request", "ping", "installation"]))),
        "X-GitHub-Delivery": draw(st.one_of(st.none(), header_text, st.uuids().map(str))),
        "Content-Type": draw(st.one_of(st.none(), header_text, st.sampled_from(
            ["application/json", "application/json; charset=utf-8", "application/json; charset=bogus",
             "application/x-www-form-urlencoded", "text/plain"]))),
    }
    return body, {k: v for k, v in h.items() if v is not None}, kind == "valid"


@pytest.fixture(scope="module")
def fuzz_app(tmp_path_factory):
    return make_app(tmp_path_factory.mktemp("fuzz"))


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(deliveries())
def test_fuzzed_deliveries_never_get_a_5xx_and_unsigned_ones_are_never_queued(fuzz_app, delivery):
    app, queue = fuzz_app
    body, h, signed = delivery
    before = queue.depth()
    resp = app.test_client().post("/webhook", data=body, headers=h)
    assert resp.status_code < 500
    if not signed:
        assert resp.status_code == 401
        assert queue.depth() == before
    elif resp.status_code == 202:
        assert queue.depth() == before + 1
    else:
        assert resp.status_code in (200, 400)
        # A signed payload whose schema fails is not queued; only its store record is
        recorded = resp.status_code == 400 and resp.json["error"].startswith("invalid payload:")
        assert queue.depth() == before + recorded


def test_an_unreachable_redis_queue_shows_in_readyz_and_deliveries_get_503(tmp_path):
    settings = load_settings({"CI_REGISTRAR_DATA_DIR": str(tmp_path), "GITHUB_WEBHOOK_SECRET": SECRET,
                              "REDIS_URL": "redis://127.0.0.1:1/0"})
    client = create_app(settings).test_client()
    ready = client.get("/readyz")
    assert ready.status_code == 503 and "queue" in ready.json["missing"] and "store" in ready.json["missing"]
    assert client.post("/webhook", data=BODY, headers=headers(BODY)).status_code == 503
