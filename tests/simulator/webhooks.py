"""Webhook deliveries: official example payloads filled with the simulator's state, validated, signed."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import secrets
import time
import uuid

from .core import Delivery, SimulatorError, iso, sign
from .manifests import ALWAYS_DELIVERED
from .schemas import webhook_examples


def deep_merge(base: dict, overrides: dict) -> dict:
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def _example(event: str, action: str | None) -> dict:
    examples = webhook_examples().get(event)
    if not examples:
        raise SimulatorError(f"no vendored example for webhook event {event!r}")
    if action in examples:
        payload = copy.deepcopy(examples[action])
    else:  # an action without its own example: start from a sibling and set the action
        payload = copy.deepcopy(next(iter(examples.values())))
    if action is not None:
        payload["action"] = action
    return payload


def _overlay(target: dict, source: dict) -> dict:
    """Replace the keys target already has (and add the ones source has) with source's values."""
    target.update(source)
    return target


def _repo_hook(sim, repo, template: dict | None) -> dict:
    rest = sim._repo_json(repo, "repository")
    out = copy.deepcopy(template) if template else {}
    for key, value in rest.items():
        if key in out or key in ("id", "node_id", "name", "full_name", "private", "owner",
                                 "html_url", "url", "default_branch", "fork"):
            out[key] = value
    out["owner"] = sim.user_json(repo.owner, "Organization" if repo.parent is None else "User")
    return out


def _app_hook(sim, app, template: dict | None) -> dict:
    rest = sim._app_json(app)
    out = copy.deepcopy(template) if template else {}
    for key, value in rest.items():
        if key in out or key in ("id", "slug", "node_id", "name", "owner", "client_id"):
            out[key] = value
    return out


def build_delivery(sim, event: str, action: str | None = None, *, app=None, repo=None,
                   pull=None, comment=None, check_run=None, run=None, installation=None,
                   sender: str | None = None, head_sha: str | None = None,
                   identifier: str | None = None, added=None, removed=None, issue=None,
                   changes: dict | None = None, **overrides) -> Delivery:
    payload = _example(event, action)
    app = app or (next(iter(sim.apps.values())) if len(sim.apps) == 1 else None)
    if app is None:
        raise SimulatorError("webhook(): pass app= (the App the delivery is for)")
    if event not in app.events and event not in ALWAYS_DELIVERED + ("ping",):
        # GitHub delivers to an App only the events it subscribed to, plus the installation ones.
        raise SimulatorError(f"webhook({event!r}): App {app.slug} is not subscribed to {event} "
                             f"(its events: {', '.join(app.events)}), so GitHub would not deliver it")
    repo = sim.repo(repo) if repo is not None else (pull.repo if pull is not None else None)
    if repo is not None:
        payload["repository"] = _repo_hook(sim, repo, payload.get("repository"))
        if repo.owner and "organization" in payload:
            org = payload["organization"]
            org.update({"login": repo.owner, "id": sim._user_id(repo.owner),
                        "url": f"{sim.url}/orgs/{repo.owner}"})
        inst = installation or sim._installation_for(app, repo.full_name)
        if inst is not None and event not in ("installation", "installation_repositories"):
            payload["installation"] = {"id": inst.id, "node_id": sim._node_id("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u", inst.id)}
    elif event not in ("installation", "installation_repositories", "ping"):
        raise SimulatorError(f"webhook({event!r}): pass repo= or pull=")
    sender_login = sender or (pull.author if pull is not None else "octocat")
    payload["sender"] = sim.user_json(sender_login)

    if event == "pull_request":
        if pull is None:
            raise SimulatorError("pull_request webhook needs pull=")
        rest = sim._pull_json(pull)
        pr = payload["pull_request"]
        for key, value in rest.items():
            if key in pr:
                pr[key] = value
        for side, where in (("head", pull.head_repository), ("base", repo)):
            pr[side]["repo"] = _repo_hook(sim, where, pr[side].get("repo"))
            pr[side]["user"] = sim.user_json(where.owner,
                                             "Organization" if where is repo else "User")
            pr[side]["label"] = f"{where.owner}:{pr[side]['ref']}"
        pr["user"] = sim.user_json(pull.author)
        payload["number"] = pull.number
        if action == "synchronize":
            payload["after"] = pull.head_sha
            parents = repo.store.commits[pull.head_sha].parents
            payload["before"] = parents[0] if parents else "0" * 40
        if action == "closed":
            pr["merged"] = pull.merged
            pr["state"] = "closed"
            pr["closed_at"] = iso(time.time())
        if action == "edited":
            payload["changes"] = changes or {"title": {"from": "old title"}}
    elif event == "issue_comment":
        if comment is None:
            raise SimulatorError("issue_comment webhook needs comment= (sim.add_comment(...))")
        rest = comment if "user" in comment else sim._comment_json(comment)
        c = payload["comment"]
        for key, value in rest.items():
            if key in c or key == "performed_via_github_app":
                c[key] = value
        number = int(rest["issue_url"].rsplit("/", 1)[-1])
        issue_obj = payload["issue"]
        issue_obj.update({"number": number, "id": sim._next_id(),
                          "url": rest["issue_url"],
                          "html_url": f"{sim.web_url}/{repo.full_name}/issues/{number}",
                          "comments_url": rest["issue_url"] + "/comments",
                          "repository_url": f"{sim.url}/repos/{repo.full_name}"})
        pr = sim.pulls.get((repo.full_name, number))
        if pr is not None:
            issue_obj.update({"title": pr.title, "user": sim.user_json(pr.author),
                              "state": pr.state, "body": pr.body or None,
                              "html_url": f"{sim.web_url}/{repo.full_name}/pull/{number}",
                              "pull_request": {
                                  "url": f"{sim.url}/repos/{repo.full_name}/pulls/{number}",
                                  "html_url": f"{sim.web_url}/{repo.full_name}/pull/{number}",
                                  "diff_url": f"{sim.web_url}/{repo.full_name}/pull/{number}.diff",
                                  "patch_url": f"{sim.web_url}/{repo.full_name}/pull/{number}.patch",
                                  "merged_at": None}})
        else:
            issue_obj.pop("pull_request", None)
            meta = sim.issues.get((repo.full_name, number), {})
            issue_obj.update({"title": meta.get("title", "An issue"),
                              "user": sim.user_json(meta.get("author", "octocat")),
                              "state": "open"})
        payload["sender"] = sim.user_json(sender or c["user"]["login"], c["user"]["type"])
        if action == "edited":
            stored = sim._comments.get(rest["id"], {})
            payload["changes"] = changes or {"body": {"from": stored.get("previous_body", "")}}
    elif event == "check_run":
        if check_run is None:
            raise SimulatorError("check_run webhook needs check_run= (id or dict)")
        cr_id = check_run if isinstance(check_run, int) else check_run["id"]
        rest = sim._check_run_json(sim._check_runs[cr_id])
        cr = payload["check_run"]
        for key in ("id", "node_id", "head_sha", "external_id", "url", "html_url", "details_url",
                    "status", "conclusion", "started_at", "completed_at", "name"):
            cr[key] = rest[key]
        cr["output"] = dict(cr.get("output") or {}, **{k: rest["output"][k] for k in
                                                        ("title", "summary", "text",
                                                         "annotations_count", "annotations_url")})
        cr["app"] = _app_hook(sim, app, cr.get("app"))
        suite = cr.get("check_suite") or {}
        suite.update({"id": rest["check_suite"]["id"], "head_sha": rest["head_sha"],
                      "app": _app_hook(sim, app, suite.get("app"))})
        suite["pull_requests"] = _pr_refs(sim, repo, rest["head_sha"])
        cr["check_suite"] = suite
        cr["pull_requests"] = _pr_refs(sim, repo, rest["head_sha"])
        if action == "requested_action":
            payload["requested_action"] = {"identifier": identifier or "approve"}
    elif event == "check_suite":
        sha = head_sha or (pull.head_sha if pull is not None else repo.head())
        cs = payload["check_suite"]
        key = (repo.full_name, app.id, sha)
        suite_id = sim._check_suites.setdefault(key, sim._next_id())
        branch = next((b for b, s in repo.branches.items() if s == sha), None)
        cs.update({"id": suite_id, "head_sha": sha, "head_branch": branch,
                   "url": f"{sim.url}/repos/{repo.full_name}/check-suites/{suite_id}",
                   "pull_requests": _pr_refs(sim, repo, sha),
                   "app": _app_hook(sim, app, cs.get("app"))})
        parents = repo.store.commits[sha].parents if sha in repo.store.commits else []
        cs["before"] = parents[0] if parents else "0" * 40
        cs["after"] = sha
        c = repo.store.commits.get(sha)
        if c is not None and isinstance(cs.get("head_commit"), dict):
            cs["head_commit"].update({"id": sha, "tree_id": c.tree, "message": c.message})
    elif event == "workflow_run":
        if run is None:
            raise SimulatorError("workflow_run webhook needs run= (id or dict)")
        run_id = run if isinstance(run, int) else run["id"]
        stored = sim._runs[run_id]
        rest = sim._run_json(stored)
        wr = payload["workflow_run"]
        always = {"id", "name", "node_id", "head_sha", "head_branch", "event", "status",
                  "conclusion", "run_attempt", "run_number", "workflow_id", "path", "url",
                  "html_url", "jobs_url", "logs_url", "check_suite_id", "display_title",
                  "created_at", "updated_at", "run_started_at", "actor", "triggering_actor",
                  "workflow_url", "check_suite_url", "artifacts_url", "cancel_url", "rerun_url"}
        for key, value in rest.items():
            if (key in wr or key in always) and key not in ("repository", "head_repository",
                                                             "head_commit"):
                wr[key] = value
        for key in ("repository", "head_repository"):
            if key in wr:
                wr[key] = _repo_hook(sim, repo, wr[key])
        if isinstance(wr.get("head_commit"), dict) and rest.get("head_commit"):
            wr["head_commit"].update({k: rest["head_commit"][k]
                                      for k in ("id", "tree_id", "message", "timestamp")})
        wr["pull_requests"] = _pr_refs(sim, repo, stored["head_sha"]) \
            if stored["event"] == "pull_request" else []
        if action == "completed" and stored["status"] != "completed":
            raise SimulatorError("workflow_run completed: complete the run first "
                                 "(sim.complete_run)")
        wf = sim.repos[stored["repo"]].workflows[stored["workflow_id"]]
        payload["workflow"].update({"id": wf["id"], "name": wf["name"], "path": wf["path"],
                                    "url": rest["workflow_url"]})
    elif event in ("installation", "installation_repositories"):
        inst = installation or next((i for i in sim.installations.values() if i.app is app), None)
        if inst is None:
            raise SimulatorError(f"{event} webhook needs installation=")
        inst_json = sim._installation_json(inst)
        payload["installation"] = _overlay(payload["installation"], {
            k: v for k, v in inst_json.items() if k in payload["installation"]})
        payload["installation"]["account"] = sim.user_json(inst.account, "Organization")

        def short(full):
            r = sim.repos[full]
            return {"id": r.id, "node_id": sim._node_id("R", r.id), "name": r.name,
                    "full_name": r.full_name, "private": r.private}
        if event == "installation":
            if action in ("created", "deleted", "new_permissions_accepted"):
                payload["repositories"] = [short(r) for r in inst.repos]
        else:
            added_names = [r if isinstance(r, str) else r.full_name for r in (added or [])]
            removed_names = [r if isinstance(r, str) else r.full_name for r in (removed or [])]
            payload["repositories_added"] = [short(r) for r in added_names]
            payload["repositories_removed"] = [short(r) for r in removed_names]
            payload["repository_selection"] = "selected"
            payload.setdefault("requester", None)
    elif event == "ping":
        payload["hook_id"] = app.hook_id
        hook = payload.get("hook", {})
        hook.update({"id": app.hook_id, "app_id": app.id, "type": "App",
                     "events": list(app.events)})
        for key in ("test_url", "ping_url", "deliveries_url", "url"):
            hook.pop(key, None) if repo is None and key != "deliveries_url" else None
        payload["hook"] = hook
        if repo is None:
            payload.pop("repository", None)
            payload.pop("organization", None)
    else:
        raise SimulatorError(f"webhook event {event!r} is not modelled")

    deep_merge(payload, overrides)
    sim.hooks.complete(event, payload.get("action") if event != "ping" else None, payload)
    problems = sim.hooks.validate(event, payload.get("action") if event != "ping" else None,
                                  payload)
    if problems:
        message = f"webhook {event}.{action}: payload invalid: " + "; ".join(problems)
        sim._violation(message)
        raise SimulatorError(message)
    body = json.dumps(payload).encode()
    delivery_id = str(uuid.uuid4())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/" + secrets.token_hex(4)[:7],
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id,
        "X-GitHub-Hook-ID": str(app.hook_id),
        "X-GitHub-Hook-Installation-Target-Type": "integration",
        "X-GitHub-Hook-Installation-Target-ID": str(app.id),
        "X-Hub-Signature": "sha1=" + hmac.new(app.webhook_secret.encode(), body,
                                              hashlib.sha1).hexdigest(),
        "X-Hub-Signature-256": sign(body, app.webhook_secret),
    }
    return Delivery(event, payload.get("action"), delivery_id, headers, body, payload,
                    app.webhook_secret)


def _pr_refs(sim, repo, sha: str) -> list[dict]:
    """The pull_requests array of check/workflow payloads: open same-repo PRs with that head.

    GitHub leaves it empty for pull requests from forks.
    """
    out = []
    for pr in sim.pulls.values():
        if pr.repo is repo and not pr.is_fork and pr.head_sha == sha and pr.state == "open":
            ref = {"id": repo.id, "url": f"{sim.url}/repos/{repo.full_name}", "name": repo.name}
            out.append({"url": f"{sim.url}/repos/{repo.full_name}/pulls/{pr.number}",
                        "id": pr.id, "number": pr.number,
                        "head": {"ref": pr.head_ref, "sha": pr.head_sha, "repo": ref},
                        "base": {"ref": pr.base_ref, "sha": pr.base_sha, "repo": ref}})
    return out
