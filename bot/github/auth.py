"""App authentication: the App's JWT, and installation tokens cached until five minutes before expiry."""

from __future__ import annotations

import datetime as dt
import functools
import threading
import time
from dataclasses import dataclass

from gidgethub.apps import get_jwt

REFRESH_MARGIN_S = 5 * 60
JWT_LIFETIME_S = 9 * 60  # under GitHub's 10-minute ceiling, with gidgethub's 60 s back-dating of iat


@dataclass
class InstallationToken:
    token: str
    expires_at: float  # epoch seconds

    def __repr__(self) -> str:  # never shows the token itself
        return f"InstallationToken(expires_at={self.expires_at})"

    def fresh(self, now: float) -> bool:
        return now < self.expires_at - REFRESH_MARGIN_S


@functools.lru_cache(maxsize=8)
def _signing_key(pem: str):
    """The App's private key, parsed once per process. PyJWT given the PEM text parses it again at
    every signature, and OpenSSL's RSA key check makes that about 60 ms of CPU each time."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    return load_pem_private_key(pem.encode() if isinstance(pem, str) else pem, password=None)


def parse_expiry(value: str) -> float:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


class AppAuth:
    """Holds the App's key; hands out a JWT and per-installation tokens, each cached while valid.

    `fetch_token(installation_id, jwt)` does the HTTP call (the client passes its own retrying one),
    returning the JSON of POST /app/installations/{id}/access_tokens.
    """

    def __init__(self, app_id: str, private_key: str, fetch_token, clock=time.time):
        self.app_id = app_id
        self._key = private_key
        self._fetch = fetch_token
        self._clock = clock
        self._jwt: tuple[str, float] | None = None
        self._tokens: dict[int, InstallationToken] = {}
        self._locks: dict[int, threading.Lock] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AppAuth(app_id={self.app_id!r})"

    def jwt(self, force: bool = False) -> str:
        now = self._clock()
        with self._lock:
            if force or self._jwt is None or now >= self._jwt[1] - 60:
                self._jwt = (get_jwt(app_id=str(self.app_id), private_key=_signing_key(self._key),
                                     expiration=JWT_LIFETIME_S),
                             now + JWT_LIFETIME_S)
            return self._jwt[0]

    def token(self, installation_id: int) -> str:
        with self._lock:
            lock = self._locks.setdefault(installation_id, threading.Lock())
        with lock:  # one refresh per installation at a time; other installations are not held up
            cached = self._tokens.get(installation_id)
            if cached is not None and cached.fresh(self._clock()):
                return cached.token
            data = self._fetch(installation_id, self.jwt())
            fresh = InstallationToken(data["token"], parse_expiry(data["expires_at"]))
            self._tokens[installation_id] = fresh
            return fresh.token

    def invalidate(self, installation_id: int, token: str | None = None) -> None:
        """Forget a token GitHub refused (401); only that one, if another thread already replaced it."""
        with self._lock:
            cached = self._tokens.get(installation_id)
            if cached is not None and (token is None or cached.token == token):
                del self._tokens[installation_id]
