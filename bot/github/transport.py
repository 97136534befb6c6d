"""PyGithub's HTTP transport: the thread's requests session, the retry policy's timeouts, every answer counted.

PyGithub sends each request through a "connection class" (github.Requester); its own keeps one
connection object per Github instance, whose request()/getresponse() pair is not safe when two
threads share the instance (blob prefetch does), takes an int timeout only, and tells nobody the
status of a call that succeeded. `Requester.injectConnectionClasses` is PyGithub's documented way
to replace it; the classes here:
- send on this thread's requests.Session (connections reused across installations; nothing
  thread-shared but the pool), with the (connect, read) timeout of the call in progress;
- report every answer (and every dropped connection) to the call in progress, which counts it in
  the metrics by endpoint and keeps the rate-limit gauge;
- outside a call of bot.github.client (PyGithub used directly, e.g. by a test) behave exactly as
  PyGithub's own classes, its retry setting included.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from dataclasses import dataclass
from typing import Callable

import requests

_pygithub_requester = importlib.import_module("github.Requester")  # the module (github.Requester is also a class)

API_VERSION = "2022-11-28"
USER_AGENT = "ci-registrar"

_local = threading.local()


def session() -> requests.Session:
    """This thread's session: no Authorization in its defaults, so nothing it sends carries a token unasked."""
    s = getattr(_local, "session", None)
    if s is None:
        s = _local.session = requests.Session()
        s.headers.update({"User-Agent": USER_AGENT, "X-GitHub-Api-Version": API_VERSION,
                          "Accept": "application/vnd.github+json"})
    return s


@dataclass
class Call:
    """The call in progress on this thread: its timeout, and who hears of each answer."""

    timeout: tuple[float, float]
    observe: Callable[[str, str, object], None]  # (method, status or exception name, headers or None)


@contextlib.contextmanager
def calling(call: Call):
    # Saved and restored, not cleared: fetching a token happens inside an installation call.
    previous = getattr(_local, "call", None)
    _local.call = call
    try:
        yield
    finally:
        _local.call = previous


def current() -> Call | None:
    return getattr(_local, "call", None)


class _Connection:
    """PyGithub's connection interface (request() records, getresponse() sends), on session()."""

    protocol = "http"
    _stock: type = _pygithub_requester.HTTPRequestsConnectionClass

    def __init__(self, host: str, port: int | None = None, strict: bool = False, timeout=None, retry=None,
                 pool_size=None, **kwargs):
        self.host, self.port, self.timeout = host, port, timeout
        self.verify = kwargs.get("verify", True)
        self._args = (host, port, strict, timeout, retry, pool_size, kwargs)
        self._stock_cnx = None
        self._pending = None

    def request(self, verb: str, url: str, input, headers: dict, stream: bool = False) -> None:
        self._pending = (verb, url, input, headers, stream)

    def getresponse(self):
        call = current()
        if call is None:  # not one of ours: PyGithub's own transport, unchanged
            host, port, strict, timeout, retry, pool_size, kwargs = self._args
            self._stock_cnx = self._stock(host, port, strict, timeout, retry, pool_size, **kwargs)
            self._stock_cnx.request(*self._pending)
            return self._stock_cnx.getresponse()
        verb, url, input, headers, stream = self._pending
        port = f":{self.port}" if self.port else ""
        try:
            resp = session().request(verb, f"{self.protocol}://{self.host}{port}{url}", headers=headers, data=input,
                                     timeout=call.timeout, verify=self.verify, allow_redirects=False, stream=stream)
        except requests.RequestException as exc:
            call.observe(verb, type(exc).__name__, None)
            raise
        call.observe(verb, str(resp.status_code), resp.headers)
        return _pygithub_requester.RequestsResponse(resp)

    def close(self) -> None:
        # The session belongs to the thread, not to this connection (PyGithub closes one per request).
        if self._stock_cnx is not None:
            self._stock_cnx.close()


class _HTTPSConnection(_Connection):
    protocol = "https"
    _stock = _pygithub_requester.HTTPSRequestsConnectionClass


def install() -> None:
    """Make every PyGithub Requester created from now on send through this module (idempotent)."""
    _pygithub_requester.Requester.injectConnectionClasses(_Connection, _HTTPSConnection)
