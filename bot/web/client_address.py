"""Which address a request comes from, and which addresses count as internal (for /metrics).

Behind a reverse proxy (deploy/nginx.conf) every request reaches the App from the proxy's own
address, loopback on the same machine: judged by that, every client on the internet would look
internal. The proxy therefore passes the client's address on (X-Forwarded-For, X-Real-IP), and
the App believes those headers only when it is told a proxy is there and the request really came
from it:

- CI_REGISTRAR_PROXY_COUNT (default 0): how many proxies stand in front of the App, each appending
  to X-Forwarded-For (nginx's $proxy_add_x_forwarded_for). werkzeug's ProxyFix then takes the
  client's address that many entries from the end, which no client can forge.
- CI_REGISTRAR_PROXY_ADDRESSES (comma-separated addresses or CIDR networks, default loopback): the
  addresses the proxy connects from. A request from anywhere else has its forwarding headers
  ignored: a client that reaches the App directly cannot name itself 127.0.0.1.

A request that carries forwarding headers the App does not believe (no proxy configured, or not
from the proxy) is never internal: behind a proxy nobody told the App about, the real client is
unknown, so /metrics wants its token.

CI_REGISTRAR_METRICS_ALLOW (same syntax, default loopback; empty: nobody) names the internal
addresses that may read /metrics without CI_REGISTRAR_METRICS_TOKEN.
"""

from __future__ import annotations

import ipaddress
import os

from werkzeug.middleware.proxy_fix import ProxyFix

LOOPBACK = "127.0.0.0/8,::1/128"
PROXY_COUNT_ENV = "CI_REGISTRAR_PROXY_COUNT"
PROXY_ADDRESSES_ENV = "CI_REGISTRAR_PROXY_ADDRESSES"
METRICS_ALLOW_ENV = "CI_REGISTRAR_METRICS_ALLOW"
UNTRUSTED_FORWARDING = "ci_registrar.untrusted_forwarding"
_FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_X_REAL_IP", "HTTP_FORWARDED")


def networks(raw: str | None, name: str, default: str = LOOPBACK) -> tuple:
    """A comma-separated list of addresses or CIDR networks; None means `default`, "" means none."""
    text = default if raw is None else raw
    found = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            found.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"{name}: {part!r} is not an IP address or CIDR network") from None
    return tuple(found)


def within(address: str | None, allowed) -> bool:
    try:
        ip = ipaddress.ip_address((address or "").split("%")[0])
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in net for net in allowed)


def proxy_count(environ=os.environ) -> int:
    raw = environ.get(PROXY_COUNT_ENV) or "0"
    if not (raw.strip().isdigit() and int(raw) <= 10):
        raise ValueError(f"{PROXY_COUNT_ENV}={raw!r}: expected a whole number of proxies, 0 to 10")
    return int(raw)


class TrustedProxies:
    """WSGI middleware: the client's address from the configured proxy's headers (see above)."""

    def __init__(self, wsgi_app, count: int | None = None, proxies=None):
        self.wsgi_app = wsgi_app
        self.count = proxy_count() if count is None else count
        self.proxies = networks(os.environ.get(PROXY_ADDRESSES_ENV), PROXY_ADDRESSES_ENV) if proxies is None else proxies
        networks(os.environ.get(METRICS_ALLOW_ENV), METRICS_ALLOW_ENV)  # a bad setting stops the start, not a scrape
        self.fixed = ProxyFix(wsgi_app, x_for=self.count, x_proto=0, x_host=0, x_port=0, x_prefix=0) if self.count else None

    def __call__(self, environ, start_response):
        if self.fixed is not None and within(environ.get("REMOTE_ADDR"), self.proxies):
            return self.fixed(environ, start_response)
        if any(h in environ for h in _FORWARDING_HEADERS):
            environ[UNTRUSTED_FORWARDING] = True
        return self.wsgi_app(environ, start_response)


def is_internal(environ) -> bool:
    """The request comes from an address in CI_REGISTRAR_METRICS_ALLOW, as far as the App can tell."""
    if environ.get(UNTRUSTED_FORWARDING):
        return False
    allowed = networks(os.environ.get(METRICS_ALLOW_ENV), METRICS_ALLOW_ENV)
    return within(environ.get("REMOTE_ADDR"), allowed)
