"""The App's settings: environment first, then the credentials file onboarding writes.

This module is the one place that reads (and re-reads) the credentials file, writes the service's
private files (0600 in a 0700 directory), and knows GitHub's web address for its API address.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_API_URL = "https://api.github.com"
CREDENTIALS_FILE = "credentials.json"
DATABASE_SCHEMES = ("sqlite", "postgresql", "postgres", "postgresql+psycopg")
REDIS_SCHEMES = ("redis", "rediss", "unix")
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


class SettingsError(ValueError):
    """A setting from the environment that cannot work, with its one-line reason (a command prints
    it and exits 2: bot/commands/errors.py). It never repeats the value: a URL may hold a password."""


def _url_problem(name: str, url: str, schemes: tuple[str, ...], example: str) -> str | None:
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme or not rest and scheme != "sqlite":
        return f"{name} is not a URL (no scheme://): use {example}"
    if scheme.lower() not in schemes:
        return f"{name} names `{scheme[:20]}`, which CI Registrar cannot use: use {example}"
    if scheme != "sqlite" and scheme != "unix":
        try:
            urlsplit(url).port  # noqa: B018 - a port that is not a number raises here
        except ValueError:
            return f"{name} has a port that is not a number: use {example}"
    return None


def check_database_url(url: str) -> str:
    problem = _url_problem("DATABASE_URL", url, DATABASE_SCHEMES, "postgresql://user@host:5432/db or sqlite:////path/to/file.db")
    if problem:
        raise SettingsError(problem)
    return url


def check_redis_url(url: str | None) -> str | None:
    if url is None:
        return None
    problem = _url_problem("REDIS_URL", url, REDIS_SCHEMES, "redis://host:6379/0")
    if problem:
        raise SettingsError(problem)
    return url


def log_level(env=None) -> str:
    """CI_REGISTRAR_LOG_LEVEL (debug, info, warning, error or critical; default info), as logging spells it."""
    env = os.environ if env is None else env
    level = (env.get("CI_REGISTRAR_LOG_LEVEL") or "info").strip().lower()
    if level == "warn":
        level = "warning"
    if level not in LOG_LEVELS:
        raise SettingsError(f"CI_REGISTRAR_LOG_LEVEL is `{level[:20]}`: one of {', '.join(LOG_LEVELS)}")
    return level.upper()


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    database_url: str
    redis_url: str | None
    github_api_url: str = DEFAULT_API_URL
    app_id: str | None = None
    private_key: str | None = field(default=None, repr=False)  # never shown in logs or reprs
    webhook_secret: str | None = field(default=None, repr=False)
    port: int = 3000
    # The App's OAuth client, for "Sign in with GitHub" on the pages (onboarding saves it).
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    public_url: str | None = None  # where GitHub and browsers reach this service

    @property
    def credentials_path(self) -> Path:
        return self.data_dir / CREDENTIALS_FILE

    @property
    def app_configured(self) -> bool:
        return bool(self.app_id and self.private_key and self.webhook_secret)


def env_float(name: str, default: float) -> float:
    """A number from the environment (tuning knobs such as CI_REGISTRAR_JOB_BACKOFF_S); the
    default when unset or not a number."""
    try:
        return float(os.environ.get(name) or default)
    except ValueError:
        return default


def read_credentials(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def reload_credentials(settings: Settings) -> Settings:
    """The settings with what the credentials file now holds filling what is still unset
    (onboarding may have finished in another process since these were read)."""
    creds = read_credentials(settings.credentials_path)
    if not creds.get("pem"):
        return settings
    return dataclasses.replace(
        settings, app_id=settings.app_id or (str(creds["id"]) if creds.get("id") else None),
        private_key=settings.private_key or creds.get("pem"),
        webhook_secret=settings.webhook_secret or creds.get("webhook_secret"),
        client_id=settings.client_id or creds.get("client_id"),
        client_secret=settings.client_secret or creds.get("client_secret"),
        public_url=settings.public_url or creds.get("public_url"))


def write_private(path: Path, data: dict | str) -> None:
    """Atomically, and readable by the owner only (0600) from the first byte on."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (data if isinstance(data, str) else json.dumps(data, indent=2)).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def github_web_url(api_url: str) -> str:
    """GitHub's web address for its REST address: api.github.com, GHES's /api/v3, a GHE.com subdomain."""
    if os.environ.get("GITHUB_WEB_URL"):
        return os.environ["GITHUB_WEB_URL"].rstrip("/")
    parts = urlsplit(api_url)
    host = parts.netloc
    if host == "api.github.com":
        return "https://github.com"
    if parts.path.rstrip("/").endswith("/api/v3"):
        return f"{parts.scheme}://{host}{parts.path.rstrip('/')[: -len('/api/v3')]}"
    if host.startswith("api.") and host.endswith(".ghe.com"):
        return f"{parts.scheme}://{host[4:]}"
    return api_url.rstrip("/")


def load_settings(environ: dict[str, str] | None = None) -> Settings:
    """Read the environment (docs/app.md); the onboarding credentials file fills what it leaves unset."""
    env = os.environ if environ is None else environ
    data_dir = Path(env.get("CI_REGISTRAR_DATA_DIR") or "./data").resolve()
    creds = read_credentials(data_dir / CREDENTIALS_FILE)

    private_key = env.get("GITHUB_PRIVATE_KEY")
    key_path = env.get("GITHUB_PRIVATE_KEY_PATH")
    if not private_key and key_path:
        private_key = Path(key_path).read_text()
    database_url = env.get("DATABASE_URL") or f"sqlite:///{data_dir / 'ci-registrar.db'}"
    return Settings(
        data_dir=data_dir,
        database_url=normalise_database_url(check_database_url(database_url)),
        redis_url=check_redis_url(env.get("REDIS_URL") or None),
        github_api_url=(env.get("GITHUB_API_URL") or creds.get("api_url") or DEFAULT_API_URL).rstrip("/"),
        app_id=env.get("GITHUB_APP_ID") or (str(creds["id"]) if creds.get("id") else None),
        private_key=private_key or creds.get("pem"),
        webhook_secret=env.get("GITHUB_WEBHOOK_SECRET") or creds.get("webhook_secret"),
        port=int(env.get("PORT") or 3000),
        client_id=env.get("GITHUB_CLIENT_ID") or creds.get("client_id"),
        client_secret=env.get("GITHUB_CLIENT_SECRET") or creds.get("client_secret"),
        public_url=env.get("CI_REGISTRAR_PUBLIC_URL") or creds.get("public_url"),
    )


def normalise_database_url(url: str) -> str:
    """postgresql:// and postgres:// (Heroku's spelling) mean psycopg 3 to SQLAlchemy here."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url
