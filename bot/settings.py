"""The App's settings: environment first, then the credentials file onboarding writes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_API_URL = "https://api.github.com"
CREDENTIALS_FILE = "credentials.json"


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

    @property
    def credentials_path(self) -> Path:
        return self.data_dir / CREDENTIALS_FILE

    @property
    def app_configured(self) -> bool:
        return bool(self.app_id and self.private_key and self.webhook_secret)


def _read_credentials(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def load_settings(environ: dict[str, str] | None = None) -> Settings:
    """Read the environment (README.md, "Running the App"); the onboarding credentials file fills what it leaves unset."""
    env = os.environ if environ is None else environ
    data_dir = Path(env.get("CI_REGISTRAR_DATA_DIR") or "./data").resolve()
    creds = _read_credentials(data_dir / CREDENTIALS_FILE)

    private_key = env.get("GITHUB_PRIVATE_KEY")
    key_path = env.get("GITHUB_PRIVATE_KEY_PATH")
    if not private_key and key_path:
        private_key = Path(key_path).read_text()
    database_url = env.get("DATABASE_URL") or f"sqlite:///{data_dir / 'ci-registrar.db'}"
    return Settings(
        data_dir=data_dir,
        database_url=normalise_database_url(database_url),
        redis_url=env.get("REDIS_URL") or None,
        github_api_url=(env.get("GITHUB_API_URL") or creds.get("api_url") or DEFAULT_API_URL).rstrip("/"),
        app_id=env.get("GITHUB_APP_ID") or (str(creds["id"]) if creds.get("id") else None),
        private_key=private_key or creds.get("pem"),
        webhook_secret=env.get("GITHUB_WEBHOOK_SECRET") or creds.get("webhook_secret"),
        port=int(env.get("PORT") or 3000),
    )


def normalise_database_url(url: str) -> str:
    """postgresql:// and postgres:// (Heroku's spelling) mean psycopg 3 to SQLAlchemy here."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url
