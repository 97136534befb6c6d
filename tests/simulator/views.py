"""GitHub's JSON for the simulator's records: skeletons from the description, overlaid with state."""

from __future__ import annotations

import base64
import hashlib
import re
from urllib.parse import quote

from .model import App, Installation, PullRequest, Repo, iso


class JsonViews:
    """Mixin of GitHubSimulator: one builder per REST object."""

    def _user_id(self, login: str) -> int:
        return int(hashlib.sha1(login.encode()).hexdigest()[:7], 16)

    def _node_id(self, prefix: str, number: int) -> str:
        return prefix + "_" + base64.b64encode(str(number).encode()).decode().rstrip("=")

    def user_json(self, login: str, user_type: str | None = None) -> dict:
        user_type = user_type or ("Bot" if login.endswith("[bot]") else "User")
        uid = self._user_id(login)
        api = f"{self.url}/users/{quote(login)}"
        return {
            "login": login, "id": uid, "node_id": self._node_id("U", uid),
            "avatar_url": f"{self.web_url}/avatars/{uid}", "gravatar_id": "", "url": api,
            "html_url": f"{self.web_url}/{login}", "followers_url": api + "/followers",
            "following_url": api + "/following{/other_user}", "gists_url": api + "/gists{/gist_id}",
            "starred_url": api + "/starred{/owner}{/repo}", "subscriptions_url": api + "/subscriptions",
            "organizations_url": api + "/orgs", "repos_url": api + "/repos",
            "events_url": api + "/events{/privacy}", "received_events_url": api + "/received_events",
            "type": user_type, "site_admin": False, "user_view_type": "public",
        }

    def _app_json(self, app: App) -> dict:
        out = self.rest.skeleton("integration")
        out.update({
            "id": app.id, "slug": app.slug, "node_id": self._node_id("A", app.id),
            "client_id": app.client_id, "owner": self.user_json(app.owner, "Organization"),
            "name": app.name, "description": None, "external_url": f"{self.web_url}/{app.owner}",
            "html_url": f"{self.web_url}/apps/{app.slug}", "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z", "permissions": dict(app.permissions),
            "events": list(app.events), "installations_count": sum(
                1 for i in self.installations.values() if i.app is app),
        })
        return out

    def _repo_json(self, repo: Repo, schema: str = "full-repository") -> dict:
        out = self.rest.skeleton(schema)
        api = f"{self.url}/repos/{repo.full_name}"
        urls = {k: v for k, v in out.items() if k.endswith("_url")}
        for key in urls:
            out[key] = f"{api}/{key[:-4].replace('_', '-')}"
        out.update({
            "id": repo.id, "node_id": self._node_id("R", repo.id), "name": repo.name,
            "full_name": repo.full_name,
            "owner": self.user_json(repo.owner, "Organization" if repo.parent is None else "User"),
            "private": repo.private, "html_url": f"{self.web_url}/{repo.full_name}",
            "url": api, "fork": repo.parent is not None, "default_branch": repo.default_branch,
            "visibility": "private" if repo.private else "public",
            "clone_url": f"{self.web_url}/{repo.full_name}.git",
            "git_url": f"git://github.invalid/{repo.full_name}.git",
            "ssh_url": f"git@github.invalid:{repo.full_name}.git",
            "svn_url": f"{self.web_url}/{repo.full_name}", "mirror_url": None, "homepage": None,
            "language": "Python", "description": None, "archived": False, "disabled": False,
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
            "pushed_at": iso(repo.pushed_at),
        })
        if "license" in out:
            out["license"] = None
        if schema == "full-repository":
            out["network_count"] = out["subscribers_count"] = 0
        return out

    def _comment_json(self, c: dict) -> dict:
        repo = c["repo"]
        app = self.apps.get(c["app_id"]) if c.get("app_id") else None
        login = app.bot_login if app else c["author"]
        return {
            "id": c["id"], "node_id": self._node_id("IC", c["id"]),
            "url": f"{self.url}/repos/{repo}/issues/comments/{c['id']}",
            "html_url": f"{self.web_url}/{repo}/pull/{c['number']}#issuecomment-{c['id']}",
            "issue_url": f"{self.url}/repos/{repo}/issues/{c['number']}",
            "body": c["body"], "user": self.user_json(login, "Bot" if app else c["user_type"]),
            "created_at": iso(c["created_at"]), "updated_at": iso(c["updated_at"]),
            "author_association": self._association(repo, login),
            "performed_via_github_app": self._app_json(app) if app else None,
        }

    def _association(self, repo: str, login: str) -> str:
        if login == repo.split("/")[0]:
            return "OWNER"
        perm = self._permissions.get((repo, login))
        if perm in ("admin", "maintain", "write", "triage"):
            return "COLLABORATOR"
        return "NONE" if login.endswith("[bot]") else "CONTRIBUTOR"

    def _pull_json(self, pr: PullRequest) -> dict:
        out = self.rest.skeleton("pull-request")
        repo = pr.repo
        api = f"{self.url}/repos/{repo.full_name}"
        files = pr.files
        commits = len(repo.store.ancestors(pr.head_sha)) - len(
            set(repo.store.ancestors(pr.head_sha)) & set(repo.store.ancestors(pr.base_sha)))

        def side(ref, sha, where):
            owner = self.user_json(where.owner, "Organization" if where is repo else "User")
            return {"label": f"{where.owner}:{ref}", "ref": ref, "sha": sha, "user": owner,
                    "repo": self._repo_json(where, "repository")}

        out.update({
            "url": f"{api}/pulls/{pr.number}", "id": pr.id, "node_id": self._node_id("PR", pr.id),
            "html_url": f"{self.web_url}/{repo.full_name}/pull/{pr.number}",
            "diff_url": f"{self.web_url}/{repo.full_name}/pull/{pr.number}.diff",
            "patch_url": f"{self.web_url}/{repo.full_name}/pull/{pr.number}.patch",
            "issue_url": f"{api}/issues/{pr.number}",
            "commits_url": f"{api}/pulls/{pr.number}/commits",
            "review_comments_url": f"{api}/pulls/{pr.number}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{api}/issues/{pr.number}/comments",
            "statuses_url": f"{api}/statuses/{pr.head_sha}",
            "number": pr.number, "state": pr.state, "locked": False, "title": pr.title,
            "user": self.user_json(pr.author), "body": pr.body or None, "labels": [],
            "milestone": None, "active_lock_reason": None, "created_at": iso(pr.created_at),
            "updated_at": iso(max(pr.updated_at, pr.created_at)),
            "closed_at": iso(max(pr.updated_at, pr.created_at)) if pr.state == "closed" else None, "merged_at": None,
            "merge_commit_sha": None, "assignee": None, "assignees": [],
            "requested_reviewers": [], "requested_teams": [],
            "head": side(pr.head_ref, pr.head_sha, pr.head_repository),
            "base": side(pr.base_ref, pr.base_sha, repo),
            "_links": {k: {"href": f"{api}/pulls/{pr.number}"} for k in
                       ("comments", "commits", "statuses", "html", "issue", "review_comments",
                        "review_comment", "self")},
            "author_association": self._association(repo.full_name, pr.author),
            "auto_merge": None, "draft": pr.draft, "merged": pr.merged, "mergeable": True,
            "rebaseable": True, "mergeable_state": "clean", "merged_by": None, "comments": sum(
                1 for c in self._comments.values()
                if c["repo"] == repo.full_name and c["number"] == pr.number),
            "review_comments": 0, "maintainer_can_modify": False, "commits": max(commits, 1),
            "additions": sum(f["additions"] for f in files),
            "deletions": sum(f["deletions"] for f in files), "changed_files": len(files),
        })
        return out

    def _diff_entry(self, repo: Repo, entry: dict, ref: str) -> dict:
        path = quote(entry["filename"])
        out = {"sha": entry["sha"], "filename": entry["filename"], "status": entry["status"],
               "additions": entry["additions"], "deletions": entry["deletions"],
               "changes": entry["changes"],
               "blob_url": f"{self.web_url}/{repo.full_name}/blob/{ref}/{path}",
               "raw_url": f"{self.web_url}/{repo.full_name}/raw/{ref}/{path}",
               "contents_url": f"{self.url}/repos/{repo.full_name}/contents/{path}?ref={ref}"}
        if entry.get("patch") is not None:
            out["patch"] = entry["patch"]
        if entry.get("previous_filename"):
            out["previous_filename"] = entry["previous_filename"]
        return out

    def account_of_email(self, email: str) -> str | None:
        """The GitHub account a commit's email names, as GitHub links them: by address only, so
        anyone may write an address that names someone else (`ID+login@users.noreply.github.com`
        or `login@users.noreply.github.com`, the App's bot included). None: no account."""
        if email == "noreply@github.com":
            return "web-flow"  # the committer of what people commit on GitHub's web pages
        m = re.fullmatch(r"(?:\d+\+)?([^@\s]+)@users\.noreply\.github\.com", email or "")
        return m.group(1) if m else None

    def verification_json(self, c) -> dict:
        """GitHub signs what its API commits for a GitHub App with no custom author, committer or
        signature ("bot signatures"), and what people commit on its web pages (committer web-flow):
        verified. A pushed commit here carries no signature."""
        if c.signed:
            return {"verified": True, "reason": "valid", "signature": "-----BEGIN PGP SIGNATURE-----",
                    "payload": f"tree {c.tree}", "verified_at": iso(c.timestamp)}
        return {"verified": False, "reason": "unsigned", "signature": None, "payload": None, "verified_at": None}

    def _commit_json(self, repo: Repo, sha: str, with_files: bool = True) -> dict:
        c = repo.store.commits[sha]
        api = f"{self.url}/repos/{repo.full_name}"
        author = {"name": c.author, "email": c.email, "date": iso(c.timestamp)}
        committer = {"name": c.committer_name, "email": c.committer_mail, "date": iso(c.timestamp)}
        author_login, committer_login = self.account_of_email(c.email), self.account_of_email(c.committer_mail)
        out = {
            "url": f"{api}/commits/{sha}", "sha": sha, "node_id": self._node_id("C", int(sha[:8], 16)),
            "html_url": f"{self.web_url}/{repo.full_name}/commit/{sha}",
            "comments_url": f"{api}/commits/{sha}/comments",
            "commit": {"url": f"{api}/git/commits/{sha}", "author": author, "committer": committer,
                       "message": c.message, "comment_count": 0,
                       "tree": {"sha": c.tree, "url": f"{api}/git/trees/{c.tree}"},
                       "verification": self.verification_json(c)},
            "author": self.user_json(author_login) if author_login else None,
            "committer": self.user_json(committer_login) if committer_login else None,
            "parents": [{"sha": p, "url": f"{api}/commits/{p}",
                         "html_url": f"{self.web_url}/{repo.full_name}/commit/{p}"}
                        for p in c.parents],
        }
        if with_files:
            entries = repo.store.diff(c.parents[0] if c.parents else None, sha)
            out["files"] = [self._diff_entry(repo, e, sha) for e in entries]
            adds = sum(e["additions"] for e in entries)
            dels = sum(e["deletions"] for e in entries)
            out["stats"] = {"additions": adds, "deletions": dels, "total": adds + dels}
        return out

    def _check_run_json(self, cr: dict) -> dict:
        api = f"{self.url}/repos/{cr['repo']}"
        app = self.apps.get(cr["app_id"])
        return {
            "id": cr["id"], "head_sha": cr["head_sha"], "node_id": self._node_id("CR", cr["id"]),
            "external_id": cr.get("external_id") or "", "url": f"{api}/check-runs/{cr['id']}",
            "html_url": f"{self.web_url}/{cr['repo']}/runs/{cr['id']}",
            "details_url": cr.get("details_url") or f"{self.web_url}/{cr['repo']}/runs/{cr['id']}",
            "status": cr["status"], "conclusion": cr.get("conclusion"),
            "started_at": cr.get("started_at"), "completed_at": cr.get("completed_at"),
            "output": {"title": cr["output"].get("title"), "summary": cr["output"].get("summary"),
                       "text": cr["output"].get("text"),
                       "annotations_count": len(cr["annotations"]),
                       "annotations_url": f"{api}/check-runs/{cr['id']}/annotations"},
            "name": cr["name"], "check_suite": {"id": cr["check_suite_id"]},
            "app": self._app_json(app) if app else None, "pull_requests": [],
        }

    def _run_json(self, run: dict) -> dict:
        repo = self.repos[run["repo"]]
        wf = repo.workflows[run["workflow_id"]]
        api = f"{self.url}/repos/{repo.full_name}"
        out = self.rest.skeleton("workflow-run")
        c = repo.store.commits.get(run["head_sha"])
        out.update({
            "id": run["id"], "name": wf["name"], "node_id": self._node_id("WFR", run["id"]),
            "check_suite_id": run["id"] + 1, "head_branch": run["head_branch"],
            "head_sha": run["head_sha"], "path": wf["path"], "run_number": run["run_number"],
            "run_attempt": run["run_attempt"], "event": run["event"], "status": run["status"],
            "conclusion": run["conclusion"], "workflow_id": wf["id"],
            "url": f"{api}/actions/runs/{run['id']}",
            "html_url": f"{self.web_url}/{repo.full_name}/actions/runs/{run['id']}",
            "pull_requests": run["pull_requests"], "created_at": iso(run["created_at"]),
            "updated_at": iso(run["updated_at"]), "run_started_at": iso(run["created_at"]),
            "actor": self.user_json(run["actor"]), "triggering_actor": self.user_json(run["actor"]),
            "jobs_url": f"{api}/actions/runs/{run['id']}/jobs",
            "logs_url": f"{api}/actions/runs/{run['id']}/logs",
            "check_suite_url": f"{api}/check-suites/{run['id'] + 1}",
            "artifacts_url": f"{api}/actions/runs/{run['id']}/artifacts",
            "cancel_url": f"{api}/actions/runs/{run['id']}/cancel",
            "rerun_url": f"{api}/actions/runs/{run['id']}/rerun",
            "workflow_url": f"{api}/actions/workflows/{wf['id']}",
            "head_commit": {"id": c.sha, "tree_id": c.tree, "message": c.message,
                            "timestamp": iso(c.timestamp),
                            "author": {"name": c.author, "email": c.email},
                            "committer": {"name": c.committer_name, "email": c.committer_mail}} if c else None,
            "repository": self._repo_json(repo, "minimal-repository"),
            "head_repository": self._repo_json(repo, "minimal-repository"),
            "display_title": run.get("display_title") or (c.message if c else wf["name"]),
        })
        return out

    def _job_json(self, job: dict) -> dict:
        run = self._runs[job["run_id"]]
        repo = run["repo"]
        wf = self.repos[repo].workflows[run["workflow_id"]]
        api = f"{self.url}/repos/{repo}"
        done = job["status"] == "completed"
        out = self.rest.skeleton("job")
        out.update({
            "id": job["id"], "run_id": run["id"], "run_url": f"{api}/actions/runs/{run['id']}",
            "run_attempt": job["run_attempt"], "node_id": self._node_id("CR", job["id"]),
            "head_sha": run["head_sha"], "url": f"{api}/actions/jobs/{job['id']}",
            "html_url": f"{self.web_url}/{repo}/actions/runs/{run['id']}/job/{job['id']}",
            "status": job["status"], "conclusion": job["conclusion"] if done else None,
            "created_at": iso(job["started_at"]), "started_at": iso(job["started_at"]),
            "completed_at": iso(job["started_at"] + 60) if done else None, "name": job["name"],
            "steps": [], "check_run_url": f"{api}/check-runs/{job['id']}",
            "labels": job["labels"], "runner_id": 1, "runner_name": job["runner_name"],
            "runner_group_id": 1, "runner_group_name": "default", "workflow_name": wf["name"],
            "head_branch": run["head_branch"],
        })
        return out

    def _installation_json(self, inst: Installation) -> dict:
        out = self.rest.skeleton("installation")
        out.update({
            "id": inst.id, "account": self.user_json(inst.account, "Organization"),
            "repository_selection": "selected",
            "access_tokens_url": f"{self.url}/app/installations/{inst.id}/access_tokens",
            "repositories_url": f"{self.url}/installation/repositories",
            "html_url": f"{self.web_url}/organizations/{inst.account}/settings/installations/{inst.id}",
            "app_id": inst.app.id, "app_slug": inst.app.slug, "target_id": self._user_id(inst.account),
            "target_type": "Organization", "permissions": dict(inst.permissions),
            "events": list(inst.app.events), "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z", "single_file_name": None,
            "suspended_at": None, "suspended_by": None,
        })
        return out
