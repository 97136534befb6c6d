"""The App manifest, validated as github.com validates it when the registration form is submitted.

GitHub creates nothing from an invalid manifest: it shows the form again with the errors. The
simulator answers 422 with the same messages, so a manifest the project produces that GitHub would
refuse fails its tests instead of failing a new user's first run.

The valid permission names and levels are `app-permissions` of the vendored REST description;
the events an App may be delivered are `vendor/app-events.json` (both from GitHub's published
descriptions, see vendor/regenerate.py).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

VENDOR = Path(__file__).resolve().parent / "vendor"

# Delivered to every App whatever it subscribes to: GitHub refuses them in default_events.
ALWAYS_DELIVERED = ("installation", "installation_repositories")

# Event -> the permissions of which any one (at any level) lets an App subscribe to it, as
# GitHub's "Permissions required for GitHub Apps" page states for each webhook event. An event
# the App may be delivered but that is missing here is refused as not modelled, never waved through.
EVENT_PERMISSIONS = {
    "check_run": ("checks",),
    "check_suite": ("checks",),
    "pull_request": ("pull_requests",),
    "pull_request_review": ("pull_requests",),
    "pull_request_review_comment": ("pull_requests",),
    "pull_request_review_thread": ("pull_requests",),
    "issue_comment": ("issues", "pull_requests"),
    "issues": ("issues",),
    "workflow_run": ("actions",),
    "workflow_job": ("actions",),
    "push": ("contents",),
    "create": ("contents",),
    "delete": ("contents",),
    "release": ("contents",),
    "status": ("statuses",),
    "organization": ("members",),
    "member": ("members",),
    "membership": ("members",),
    "team": ("members",),
}

URL_KEYS = ("url", "redirect_url", "setup_url")
MAX_CALLBACK_URLS = 10
# The keys of an App manifest ("Registering a GitHub App from a manifest", GitHub's docs); another
# is refused rather than ignored, so a misspelt key never silently drops a setting.
MANIFEST_KEYS = ("name", "url", "hook_attributes", "redirect_url", "callback_urls", "setup_url", "description",
                 "public", "default_events", "default_permissions", "request_oauth_on_install", "setup_on_update")
HOOK_KEYS = ("url", "active")
BOOLEAN_KEYS = ("public", "request_oauth_on_install", "setup_on_update")
MAX_NAME_LENGTH = 34  # github.com: "Name is too long (maximum is 34 characters)"


@lru_cache(maxsize=1)
def permission_levels() -> dict[str, tuple[str, ...]]:
    rest = json.loads((VENDOR / "rest-api.json").read_text())
    props = rest["components"]["schemas"]["app-permissions"]["properties"]
    return {name: tuple(schema.get("enum") or ()) for name, schema in props.items()}


@lru_cache(maxsize=1)
def app_events() -> frozenset[str]:
    return frozenset(json.loads((VENDOR / "app-events.json").read_text())["events"])


def _bad_url(value) -> bool:
    if not isinstance(value, str) or any(c.isspace() for c in value):
        return True
    parts = urlsplit(value)
    return parts.scheme not in ("http", "https") or not parts.hostname


def manifest_errors(manifest) -> list[str]:
    """Every reason GitHub would refuse `manifest` (empty: it would register the App)."""
    if not isinstance(manifest, dict):
        return ["manifest must be a JSON object"]
    errors = []
    unknown_keys = sorted(k for k in manifest if k not in MANIFEST_KEYS)
    if unknown_keys:
        errors.append(f"Unknown manifest keys: {', '.join(unknown_keys)}")
    name = manifest.get("name")
    if not isinstance(name, str) or not name.strip():
        errors.append("Name can't be blank")
    elif len(name) > MAX_NAME_LENGTH:
        errors.append(f"Name is too long (maximum is {MAX_NAME_LENGTH} characters)")
    for key in BOOLEAN_KEYS:
        if key in manifest and not isinstance(manifest[key], bool):
            errors.append(f"{key.replace('_', ' ').capitalize()} must be true or false")
    if not manifest.get("url"):
        errors.append("Url can't be blank")
    hook = manifest.get("hook_attributes") or {}
    if not isinstance(hook, dict):
        errors.append("hook_attributes must be an object")
        hook = {}
    unknown_hook = sorted(k for k in hook if k not in HOOK_KEYS)
    if unknown_hook:
        errors.append(f"Unknown hook attributes: {', '.join(unknown_hook)}")
    if "active" in hook and not isinstance(hook["active"], bool):
        errors.append("Hook active must be true or false")
    if hook.get("active", True) and not hook.get("url"):
        errors.append("Hook url can't be blank")
    for key in URL_KEYS:
        if manifest.get(key) and _bad_url(manifest[key]):
            errors.append(f"{key.replace('_', ' ').capitalize()} is not a valid URL")
    if hook.get("url") and _bad_url(hook["url"]):
        errors.append("Hook url is not a valid URL")
    callbacks = manifest.get("callback_urls") or []
    if not isinstance(callbacks, list) or any(_bad_url(u) for u in callbacks):
        errors.append("Callback urls are not valid URLs")
    elif len(callbacks) > MAX_CALLBACK_URLS:
        errors.append(f"Callback urls may list at most {MAX_CALLBACK_URLS}")

    permissions = manifest.get("default_permissions") or {}
    levels = permission_levels()
    if not isinstance(permissions, dict):
        errors.append("Default permissions must be an object")
        permissions = {}
    unknown = sorted(p for p in permissions if p not in levels)
    if unknown:
        errors.append(f"Default permissions unsupported: {', '.join(unknown)}")
    bad_level = sorted(p for p, level in permissions.items() if p in levels and level not in levels[p])
    if bad_level:
        errors.append("Default permissions have invalid access levels: "
                      + ", ".join(f"{p}={permissions[p]}" for p in bad_level))

    events = manifest.get("default_events") or []
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        return errors + ["Default events must be a list of event names"]
    known = app_events()
    unsupported = [e for e in events if e in ALWAYS_DELIVERED or e not in known]
    if unsupported:
        errors.append(f"Default events unsupported: {', '.join(unsupported)}")
    not_modelled = [e for e in events if e in known and e not in ALWAYS_DELIVERED and e not in EVENT_PERMISSIONS]
    if not_modelled:
        errors.append(f"(simulator) no permission model for default events: {', '.join(not_modelled)}; "
                      "add them to tests/simulator/manifests.py EVENT_PERMISSIONS")
    uncovered = [e for e in events if e in EVENT_PERMISSIONS and not any(p in permissions for p in EVENT_PERMISSIONS[e])]
    if uncovered:
        errors.append(f"Default events are not supported by permissions: {', '.join(uncovered)}")
    return errors
