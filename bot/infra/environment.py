"""Every environment variable the App reads: what it means, its default, and what a valid value is.

`serve` and `worker` check the whole environment before they start (`check_environment`): a bad
value stops them with one line naming the variable and what it accepts, exit 2, where it would
otherwise be ignored (a number that is not one fell back to its default), or crash much later
with a traceback. docs/environment.md is generated from this table (`make docs`), and
tests/bot/infra/test_environment.py fails when a variable read anywhere in bot/ or checks/ is missing here.

The readers stay where they are (each module reads its own knob where it is used); this table
only says which values they can use. A value is never repeated in a message: it may be a secret.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bot.infra.settings import (DATABASE_SCHEMES, LOG_LEVELS, REDIS_SCHEMES, SettingsError, _url_problem)


@dataclass(frozen=True)
class Variable:
    name: str
    default: str  # as the docs show it
    meaning: str
    check: Callable[[str], str | None] | None = None  # the value -> what is wrong with it, or None
    group: str = "service"


# -- what a valid value is ---------------------------------------------------------------------------
def number(minimum: float = 0.0, *, whole: bool = False, above: bool = False, maximum: float | None = None):
    kind = "a whole number" if whole else "a number"
    bound = f"from {minimum:g} to {maximum:g}" if maximum is not None else f"{'above' if above else 'at least'} {minimum:g}"

    def check(value: str) -> str | None:
        try:
            n = int(value.strip().replace("_", "")) if whole else float(value)
        except ValueError:
            return f"expected {kind} {bound}"
        if n != n or n in (float("inf"), float("-inf")) or (n <= minimum if above else n < minimum) \
                or (maximum is not None and n > maximum):
            return f"expected {kind} {bound}"
        return None
    check.accepts = f"{kind}, {bound}"
    return check


def one_of(*values: str, aliases: tuple[str, ...] = ()):
    def check(value: str) -> str | None:
        return None if value.strip().lower() in {v.lower() for v in values + aliases} else f"expected one of {', '.join(values)}"
    check.accepts = "one of " + ", ".join(f"`{v}`" for v in values)
    return check


def url(schemes: tuple[str, ...], example: str, name: str):
    def check(value: str) -> str | None:
        return _url_problem(name, value, schemes, example)  # the message settings.py gives, name first
    check.accepts = f"a URL like `{example.split(' or ')[0]}`"
    return check


def http_url(value: str) -> str | None:
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest.strip("/"):
        return "expected an absolute http(s) URL"
    return None


http_url.accepts = "an absolute http(s) URL"


def networks(value: str) -> str | None:
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        try:
            ipaddress.ip_network(part, strict=False)
        except ValueError:
            return "expected comma-separated IP addresses or CIDR networks"
    return None


networks.accepts = "comma-separated addresses or CIDR networks"


def readable_file(value: str) -> str | None:
    return None if Path(value).is_file() and os.access(value, os.R_OK) else "expected a readable file"


readable_file.accepts = "a readable file"


def claims(value: str) -> str | None:
    for item in value.replace(";", ",").split(","):
        if not item.strip():
            continue
        claimant, sep, source = (part.strip() for part in item.partition("<-"))
        if not (sep and "/" in claimant and "/" in source):
            return "expected comma-separated `OWNER/NAME<-OWNER/NAME` pairs"
    return None


claims.accepts = "comma-separated `claimant<-source` repository pairs"

ON_OFF = one_of("on", "off", aliases=("1", "0", "true", "false", "yes", "no"))
SECONDS = number(0, above=True)
WHOLE = number(1, whole=True)

# -- the table ---------------------------------------------------------------------------------------
VARIABLES: tuple[Variable, ...] = (
    # where things are
    Variable("CI_REGISTRAR_DATA_DIR", "./data", "the data directory: SQLite store and queue, credentials, set-up token", None, "where"),
    Variable("DATABASE_URL", "SQLite in the data directory", "the store: `postgresql://...` or `sqlite:///...`",
             url(DATABASE_SCHEMES, "postgresql://user@host:5432/db or sqlite:////path/to/file.db", "DATABASE_URL"), "where"),
    Variable("REDIS_URL", "unset: SQLite in the data directory", "the queue: `redis://`, `rediss://` or `unix://`",
             url(REDIS_SCHEMES, "redis://host:6379/0", "REDIS_URL"), "where"),
    Variable("CI_REGISTRAR_QUEUE_NAME", "ci-registrar", "the queue's name (its Redis keys); processes sharing one queue use the same", None, "where"),
    Variable("CI_REGISTRAR_CACHE_DIR", "$XDG_CACHE_HOME/ci-registrar", "where `ci-registrar check` keeps its scan cache", None, "where"),
    # the GitHub App
    Variable("GITHUB_APP_ID", "from the credentials file", "the App's id", number(1, whole=True), "github"),
    Variable("GITHUB_PRIVATE_KEY", "from the credentials file", "the App's private key (PEM)", None, "github"),
    Variable("GITHUB_PRIVATE_KEY_PATH", "unset", "a file holding the App's private key", readable_file, "github"),
    Variable("GITHUB_WEBHOOK_SECRET", "from the credentials file", "the webhook secret deliveries are signed with", None, "github"),
    Variable("GITHUB_CLIENT_ID", "from the credentials file", "the App's OAuth client, for \"Sign in with GitHub\"", None, "github"),
    Variable("GITHUB_CLIENT_SECRET", "from the credentials file", "its secret", None, "github"),
    Variable("GITHUB_API_URL", "https://api.github.com", "GitHub's REST API (`https://HOST/api/v3` for GitHub Enterprise Server)", http_url, "github"),
    Variable("GITHUB_WEB_URL", "derived from GITHUB_API_URL", "GitHub's web address, where it is not the API's", http_url, "github"),
    Variable("CI_REGISTRAR_MANIFEST", "bot/web/app-manifest.json", "the App manifest the set-up page posts", readable_file, "github"),
    # the web service
    Variable("HOST", "127.0.0.1", "the address `serve` listens on (the image and Procfile say 0.0.0.0)", None, "web"),
    Variable("PORT", "3000", "the port `serve` listens on", number(0, whole=True, maximum=65535), "web"),
    Variable("WEB_CONCURRENCY", "2 per core (`--no-worker`), else 1", "web worker processes of `serve`", WHOLE, "web"),
    Variable("CI_REGISTRAR_PUBLIC_URL", "asked by the set-up page", "where GitHub and browsers reach the service", http_url, "web"),
    Variable("CI_REGISTRAR_WEBHOOK_PROXY_URL", "unset", "a webhook proxy channel (smee.io) `serve` forwards from, on a laptop", http_url, "web"),
    Variable("CI_REGISTRAR_SESSION_SECRET", "a key made once in the data directory", "signs the pages' session cookies", None, "web"),
    Variable("CI_REGISTRAR_METRICS_TOKEN", "unset", "a bearer token that opens `/metrics` to anyone holding it", None, "web"),
    Variable("CI_REGISTRAR_METRICS_ALLOW", "loopback", "addresses or networks `/metrics` answers without the token", networks, "web"),
    Variable("CI_REGISTRAR_PROXY_COUNT", "0", "reverse proxies in front whose X-Forwarded-For is believed", number(0, whole=True, maximum=10), "web"),
    Variable("CI_REGISTRAR_PROXY_ADDRESSES", "loopback", "where those proxies are", networks, "web"),
    Variable("CI_REGISTRAR_ACCESS_LOG", "on", "one log line per request", ON_OFF, "web"),
    Variable("CI_REGISTRAR_LOG_LEVEL", "info", "the JSON log on stderr of `serve` and `worker`", one_of(*LOG_LEVELS, aliases=("warn",)), "web"),
    Variable("CI_REGISTRAR_BODY_TIMEOUT_S", "5", "how long a request body may take to arrive (408 after)", SECONDS, "web"),
    Variable("CI_REGISTRAR_INTAKE_TIMEOUT_S", "0.4", "the intake's and `/readyz`'s Redis deadline (503 after)", SECONDS, "web"),
    Variable("CI_REGISTRAR_SHUTDOWN_GRACE_S", "20", "how long SIGTERM waits for running jobs", number(0), "web"),
    # the queue and the jobs
    Variable("CI_REGISTRAR_REDIS_TIMEOUT_S", "2", "how long one Redis command of a worker may take", SECONDS, "jobs"),
    Variable("CI_REGISTRAR_QUEUE_SYNCHRONOUS", "NORMAL", "the SQLite queue's `synchronous` pragma", one_of("OFF", "NORMAL", "FULL", "EXTRA"), "jobs"),
    Variable("CI_REGISTRAR_JOB_LEASE_S", "60", "how long a job's claim lasts without its worker's heartbeat", SECONDS, "jobs"),
    Variable("CI_REGISTRAR_JOB_ATTEMPTS", "5", "tries of a job GitHub keeps failing", WHOLE, "jobs"),
    Variable("CI_REGISTRAR_JOB_BACKOFF_S", "5", "the first wait between them (doubling)", number(0), "jobs"),
    Variable("CI_REGISTRAR_JOB_MAX_CRASHES", "3", "crashes of its worker that make a job a dead letter", WHOLE, "jobs"),
    Variable("CI_REGISTRAR_INSTALLATION_JOBS", "all job threads but one", "jobs one installation may run at once", WHOLE, "jobs"),
    Variable("CI_REGISTRAR_CLAIM_WAIT_S", "30", "how long a job waits for another job on the same head", number(0), "jobs"),
    Variable("CI_REGISTRAR_STORE_DOWN_BUDGET_S", "21600", "how long a delivery waits for an unreachable store before it is given up", number(0), "jobs"),
    Variable("CI_REGISTRAR_RECONCILE_EVERY_S", "300", "how often the reconciler passes (stale check runs, expiries, calibration PRs)", SECONDS, "jobs"),
    Variable("CI_REGISTRAR_STALE_CHECK_S", "7200", "a check run in progress longer than this is completed by the reconciler", SECONDS, "jobs"),
    Variable("CI_REGISTRAR_REPORT_DEADLINE_S", "21600", "how long a failure report keeps retrying", number(0), "jobs"),
    Variable("CI_REGISTRAR_HTTP_ATTEMPTS", "3", "tries of one GitHub request", WHOLE, "jobs"),
    Variable("CI_REGISTRAR_HTTP_BACKOFF_S", "0.5", "the first wait between them", number(0), "jobs"),
    Variable("CI_REGISTRAR_HTTP_TIMEOUT_S", "30", "a GitHub response's read timeout", SECONDS, "jobs"),
    Variable("CI_REGISTRAR_CONSUMER_TTL_S", "600", "how long an external consumer's workflow is kept before asking GitHub again", number(0), "jobs"),
    Variable("CI_REGISTRAR_DURATION_CLAIMS", "unset", "durations a repository may claim from another's runs (`claimant<-source`)", claims, "jobs"),
    Variable("CI_REGISTRAR_INDEX_MAX_AGE_DAYS", "30", "the registration index keeps entries this long", WHOLE, "jobs"),
    Variable("CI_REGISTRAR_INDEX_MAX_MB", "256", "and at most this much", WHOLE, "jobs"),
    # analysis
    Variable("CI_REGISTRAR_ANALYSIS_TIMEOUT_S", "60", "an analysis child's time limit", SECONDS, "analysis"),
    Variable("CI_REGISTRAR_ANALYSIS_MEMORY_MB", "1024", "an analysis child's memory limit", SECONDS, "analysis"),
    Variable("CI_REGISTRAR_ANALYSIS_SLOTS", "the cores", "analyses at once, across every worker process", WHOLE, "analysis"),
    Variable("CI_REGISTRAR_ANALYSIS_QUANTUM_S", "1", "how long an analysis runs before it yields its slot to a waiting installation", SECONDS, "analysis"),
    Variable("CI_REGISTRAR_ANALYSIS_SLOT_LEASE_S", "30", "how long a slot's claim lasts without renewal", SECONDS, "analysis"),
)
BY_NAME = {v.name: v for v in VARIABLES}
LIMIT_PREFIX = "CI_REGISTRAR_LIMIT_"  # the analysis caps, one variable per cap (checks/limits.py)
GROUPS = {"where": "Where things are", "github": "The GitHub App", "web": "The web service",
          "jobs": "The queue and the jobs", "analysis": "Analyses"}


def problems(env=None) -> list[str]:
    """One line per variable whose value cannot work, in the table's order."""
    env = os.environ if env is None else env
    found = []
    for variable in VARIABLES:
        value = env.get(variable.name)
        if not value or variable.check is None:  # unset or empty: the default
            continue
        problem = variable.check(value)
        if problem:
            found.append(problem if problem.startswith(variable.name) else f"{variable.name}: {problem}")
    try:
        from checks.limits import Limits

        Limits.from_env(env)
    except ValueError as exc:
        found.append(str(exc).split("=", 1)[0].split(" ", 1)[0] + ": " + _limit_problem(str(exc)))
    return found


def _limit_problem(message: str) -> str:
    return "expected a positive integer" if "expected a positive integer" in message else message.split(" ", 1)[1]


def check_environment(env=None) -> None:
    """Raise SettingsError (one line: the first bad variable, and how many more) when a value cannot work."""
    found = problems(env)
    if found:
        more = f" (and {len(found) - 1} more: {', '.join(p.split(':', 1)[0] for p in found[1:])})" if len(found) > 1 else ""
        raise SettingsError(found[0] + more)


def markdown() -> str:
    """docs/environment.md."""
    lines = ["# Environment", "",
             "<!-- Generated by `python -m bot.infra.environment` (make docs) from bot/infra/environment.py:",
             "     edit that table, not this file. tests/bot/infra/test_environment.py fails when it is stale. -->", "",
             "Every variable `ci-registrar serve` and `ci-registrar worker` read. Both check every value before",
             "they start: a value that cannot work stops them with one line naming the variable and what it",
             "accepts (exit 2); the value itself is never printed. Unset or empty means the default.", ""]
    for group, title in GROUPS.items():
        lines += [f"## {title}", "", "| variable | default | meaning | accepts |", "| --- | --- | --- | --- |"]
        for v in VARIABLES:
            if v.group == group:
                accepts = getattr(v.check, "accepts", "any text") if v.check else "any text"
                lines.append(f"| `{v.name}` | {v.default} | {v.meaning} | {accepts} |")
        lines.append("")
    lines += ["## Analysis caps", "",
              f"`{LIMIT_PREFIX}<NAME>` sets one cap of the engine (a positive integer; an unknown name is an error):",
              "", "| variable | default |", "| --- | --- |"]
    from checks.limits import Limits

    defaults = Limits()
    lines += [f"| `{Limits.env_var(n)}` | {getattr(defaults, n):,} |" for n in Limits.names()]
    lines += ["", "What each cap bounds: [limits.md](limits.md).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")
