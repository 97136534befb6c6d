"""The REST operations the simulator answers, one method per operationId of the vendored description."""

from __future__ import annotations

import base64
import copy
import json
import posixpath
import re
import secrets
import time
from urllib.parse import quote, urlencode

from .gitobjects import commentable_lines
from .model import ApiError, PullRequest, Repo, iso
from .server import Request


class RestOperations:
    """Mixin of GitHubSimulator: handlers return (status, JSON or bytes or None, headers)."""

    def _repo_param(self, params) -> Repo:
        repo = self.repos.get(f"{params['owner']}/{params['repo']}")
        if repo is None:
            raise ApiError(404, "Not Found")
        return repo

    def _page(self, req: Request, items: list, base_path: str) -> tuple[list, dict]:
        per_page = min(int(req.query.get("per_page", ["30"])[-1]), 100)
        page = max(int(req.query.get("page", ["1"])[-1]), 1)
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page: page * per_page]
        links = []
        query = {k: v[-1] for k, v in req.query.items() if k != "page"}

        def link(n, rel):
            return f'<{self.url}{base_path}?{urlencode({**query, "page": n})}>; rel="{rel}"'
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        return chunk, ({"Link": ", ".join(links)} if links else {})

    def op_apps_get_authenticated(self, req, params, body):
        return 200, self._app_json(self._auth_app), {}

    def op_apps_list_installations(self, req, params, body):
        items = [self._installation_json(i) for i in self.installations.values()
                 if i.app is self._auth_app]
        chunk, headers = self._page(req, items, req.raw_path)
        return 200, chunk, headers

    def op_apps_get_repo_installation(self, req, params, body):
        full = f"{params['owner']}/{params['repo']}"
        inst = self._installation_for(self._auth_app, full)
        if inst is None:
            raise ApiError(404, "Not Found")
        return 200, self._installation_json(inst), {}

    def op_apps_create_installation_access_token(self, req, params, body):
        inst = self.installations.get(int(params["installation_id"]))
        if inst is None or inst.app is not self._auth_app:
            raise ApiError(404, "Not Found")
        body = body or {}
        repos = None
        if body.get("repositories") or body.get("repository_ids"):
            repos = []
            for name in body.get("repositories", []):
                full = name if "/" in name else f"{inst.account}/{name}"
                if full not in inst.repos:
                    raise ApiError(422, f"There is at least one repository that does not exist "
                                        f"or is not accessible to the parent installation.")
                repos.append(full)
            for rid in body.get("repository_ids", []):
                match = [r for r in inst.repos if self.repos[r].id == rid]
                if not match:
                    raise ApiError(422, "There is at least one repository that does not exist "
                                        "or is not accessible to the parent installation.")
                repos.append(match[0])
        permissions = dict(inst.permissions)
        order = {"read": 1, "write": 2, "admin": 3}
        if body.get("permissions"):
            for name, level in body["permissions"].items():
                if order.get(inst.permissions.get(name), 0) < order.get(level, 9):
                    raise ApiError(422, f"The permissions requested are not granted to this "
                                        f"installation.")
            permissions = dict(body["permissions"])
        token = "ghs_" + secrets.token_hex(18)
        expires = time.time() + self.token_ttl
        record = {"token": token, "installation_id": inst.id, "expires_at": expires,
                  "permissions": permissions, "repositories": repos}
        self._tokens[token] = record
        self.tokens_issued.append(dict(record))
        out = {"token": token, "expires_at": iso(expires), "permissions": permissions,
               "repository_selection": "selected"}
        if repos is not None:
            out["repositories"] = [self._repo_json(self.repos[r], "repository") for r in repos]
        return 201, out, {}

    def op_apps_create_from_manifest(self, req, params, body):
        record = self._manifest_codes.pop(params["code"], None)
        if record is None or record["expires"] < time.time():
            raise ApiError(404, "Not Found")
        manifest = record["manifest"]
        app = self.create_app(name=manifest.get("name", "app"),
                              owner=record["owner"] or "octocat",
                              permissions=manifest.get("default_permissions") or None,
                              events=manifest.get("default_events") or None)
        app.callback_urls = list(manifest.get("callback_urls") or [])
        out = self._app_json(app)
        out.update({"client_id": app.client_id, "client_secret": app.client_secret,
                    "webhook_secret": app.webhook_secret, "pem": app.private_key_pem})
        return 201, out, {}

    def op_repos_get(self, req, params, body):
        return 200, self._repo_json(self._repo_param(params)), {}

    def op_pulls_get(self, req, params, body):
        repo = self._repo_param(params)
        pr = self.pulls.get((repo.full_name, int(params["pull_number"])))
        if pr is None:
            raise ApiError(404, "Not Found")
        return 200, self._pull_json(pr), {}

    def op_pulls_list_files(self, req, params, body):
        repo = self._repo_param(params)
        pr = self.pulls.get((repo.full_name, int(params["pull_number"])))
        if pr is None:
            raise ApiError(404, "Not Found")
        items = [self._diff_entry(repo, e, pr.head_sha) for e in pr.files][:3000]
        chunk, headers = self._page(req, items, req.raw_path)
        return 200, chunk, headers

    def op_pulls_create_review_comment(self, req, params, body):
        repo = self._repo_param(params)
        pr = self.pulls.get((repo.full_name, int(params["pull_number"])))
        if pr is None:
            raise ApiError(404, "Not Found")
        entry = self._check_review_position(pr, body)
        cid = self._next_id()
        record = {"id": cid, "repo": repo.full_name, "number": pr.number, **body,
                  "user": self._auth_app.bot_login}
        self._review_comments.append(record)
        return 201, self._review_comment_json(repo, pr, record, entry), {}

    def op_pulls_list_review_comments(self, req, params, body):
        repo = self._repo_param(params)
        pr = self.pulls.get((repo.full_name, int(params["pull_number"])))
        if pr is None:
            raise ApiError(404, "Not Found")
        items = []
        for record in self._review_comments:
            if record["repo"] == repo.full_name and record["number"] == pr.number:
                entry = next((e for e in pr.files if e["filename"] == record.get("path")), {})
                items.append(self._review_comment_json(repo, pr, record, entry))
        chunk, headers = self._page(req, items, req.raw_path)
        return 200, chunk, headers

    def _check_review_position(self, pr: PullRequest, comment: dict) -> dict:
        entry = next((e for e in pr.files if e["filename"] == comment.get("path")), None)
        if entry is None:
            raise ApiError(422, "Validation Failed", errors=[
                {"resource": "PullRequestReviewComment", "code": "invalid", "field": "path",
                 "message": "path could not be resolved"}])
        if comment.get("subject_type") == "file":
            return entry
        line = comment.get("line", comment.get("position"))
        right, left = commentable_lines(entry.get("patch"))
        allowed = left if comment.get("side") == "LEFT" else right
        lines = [line] + ([comment["start_line"]] if comment.get("start_line") else [])
        if line is None or any(n not in allowed for n in lines):
            raise ApiError(422, "Validation Failed", errors=[
                {"resource": "PullRequestReviewComment", "code": "custom", "field":
                 "pull_request_review_thread.line",
                 "message": "pull_request_review_thread.line must be part of the diff"}])
        if "commit_id" in comment and comment["commit_id"] not in pr.repo.store.commits:
            raise ApiError(422, "Validation Failed", errors=[
                {"resource": "PullRequestReviewComment", "code": "invalid", "field": "commit_id"}])
        return entry

    def _review_comment_json(self, repo, pr, record, entry) -> dict:
        out = self.rest.skeleton("pull-request-review-comment")
        api = f"{self.url}/repos/{repo.full_name}"
        out.update({
            "url": f"{api}/pulls/comments/{record['id']}", "id": record["id"],
            "node_id": self._node_id("PRRC", record["id"]), "pull_request_review_id": None,
            "diff_hunk": (entry.get("patch") or "")[:200], "path": record["path"],
            "commit_id": record.get("commit_id", pr.head_sha), "original_commit_id": pr.head_sha,
            "user": self.user_json(record["user"], "Bot"), "body": record["body"],
            "created_at": iso(time.time()), "updated_at": iso(time.time()),
            "html_url": f"{self.web_url}/{repo.full_name}/pull/{pr.number}#discussion_r{record['id']}",
            "pull_request_url": f"{api}/pulls/{pr.number}", "author_association": "NONE",
            "_links": {"self": {"href": f"{api}/pulls/comments/{record['id']}"},
                       "html": {"href": f"{self.web_url}/{repo.full_name}/pull/{pr.number}"},
                       "pull_request": {"href": f"{api}/pulls/{pr.number}"}},
        })
        return out

    def op_pulls_create_review(self, req, params, body):
        repo = self._repo_param(params)
        pr = self.pulls.get((repo.full_name, int(params["pull_number"])))
        if pr is None:
            raise ApiError(404, "Not Found")
        body = body or {}
        for comment in body.get("comments", []):
            self._check_review_position(pr, comment)
        rid = self._next_id()
        event = body.get("event")
        state = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED",
                 "COMMENT": "COMMENTED"}.get(event, "PENDING")
        record = {"id": rid, "repo": repo.full_name, "number": pr.number, "state": state,
                  **body, "user": self._auth_app.bot_login}
        self._reviews.append(record)
        for comment in body.get("comments", []):
            self._review_comments.append({"id": self._next_id(), "repo": repo.full_name,
                                          "number": pr.number, "review_id": rid, **comment,
                                          "commit_id": body.get("commit_id", pr.head_sha),
                                          "user": self._auth_app.bot_login})
        api = f"{self.url}/repos/{repo.full_name}"
        out = {"id": rid, "node_id": self._node_id("PRR", rid),
               "user": self.user_json(self._auth_app.bot_login, "Bot"), "body": body.get("body", ""),
               "state": state, "html_url": f"{self.web_url}/{repo.full_name}/pull/{pr.number}#pullrequestreview-{rid}",
               "pull_request_url": f"{api}/pulls/{pr.number}",
               "_links": {"html": {"href": f"{self.web_url}/{repo.full_name}/pull/{pr.number}"},
                          "pull_request": {"href": f"{api}/pulls/{pr.number}"}},
               "submitted_at": iso(time.time()), "commit_id": body.get("commit_id", pr.head_sha),
               "author_association": "NONE"}
        return 200, out, {}

    def op_repos_get_content(self, req, params, body):
        repo = self._repo_param(params)
        ref = req.query.get("ref", [None])[-1]
        sha = repo.resolve(ref)
        if sha is None:
            raise ApiError(404, f"No commit found for the ref {ref}")
        commit = repo.store.commits[sha]
        path = params["path"].strip("/")
        found = repo.store.subtree(commit.tree, path)
        if found is None:
            raise ApiError(404, "Not Found")
        kind, obj = found
        ref_q = ref or repo.default_branch
        api = f"{self.url}/repos/{repo.full_name}"

        def entry_json(p, k, s, size):
            url = f"{api}/contents/{quote(p)}?ref={ref_q}"
            git_url = f"{api}/git/{'trees' if k == 'tree' else 'blobs'}/{s}"
            html = f"{self.web_url}/{repo.full_name}/{'tree' if k == 'tree' else 'blob'}/{ref_q}/{quote(p)}"
            return {"type": "dir" if k == "tree" else "file", "size": size or 0,
                    "name": p.rsplit("/", 1)[-1], "path": p, "sha": s, "url": url,
                    "git_url": git_url, "html_url": html,
                    "download_url": None if k == "tree" else
                    f"{self.web_url}/{repo.full_name}/raw/{ref_q}/{quote(p)}",
                    "_links": {"self": url, "git": git_url, "html": html}}
        if kind == "tree":
            prefix = path + "/" if path else ""
            items = [entry_json(prefix + name, k, s,
                                len(repo.store.blobs[s]) if k == "blob" else 0)
                     for _, name, k, s in repo.store.trees[obj]][:1000]
            return 200, items, {}
        content = repo.store.blobs[obj]
        parent, _, name = path.rpartition("/")
        _, parent_tree = repo.store.subtree(commit.tree, parent)
        if any(m == "120000" and n == name for m, n, _, _ in repo.store.trees[parent_tree]):
            # A symbolic link: GitHub answers with the file it leads to when that is a file of the
            # repository, else with the link itself (type "symlink" and its target).
            target = posixpath.normpath(posixpath.join(parent, content.decode("utf-8", "replace")))
            led = repo.store.subtree(commit.tree, target) if not target.startswith("../") else None
            if led is not None and led[0] == "blob":
                path, obj, content = target, led[1], repo.store.blobs[led[1]]
            else:
                out = entry_json(path, "blob", obj, len(content))
                out.update(type="symlink", target=content.decode("utf-8", "replace"))
                return 200, out, {}
        accept = req.headers.get("accept", "")
        if "application/vnd.github.raw" in accept or "vnd.github.v3.raw" in accept:
            return 200, content, {"Content-Type": "application/vnd.github.raw; charset=utf-8"}
        out = entry_json(path, "blob", obj, len(content))
        out["encoding"] = "base64"
        out["content"] = _b64_lines(content) if len(content) <= 1_000_000 else ""
        if len(content) > 1_000_000:
            out["encoding"] = "none"
        return 200, out, {}

    def op_git_get_blob(self, req, params, body):
        repo = self._repo_param(params)
        content = repo.store.blobs.get(params["file_sha"])
        if content is None:
            raise ApiError(404, "Not Found")
        accept = req.headers.get("accept", "")
        if "application/vnd.github.raw" in accept:
            return 200, content, {"Content-Type": "application/vnd.github.raw; charset=utf-8"}
        return 200, {"sha": params["file_sha"], "node_id": self._node_id("B", len(content)),
                     "size": len(content),
                     "url": f"{self.url}/repos/{repo.full_name}/git/blobs/{params['file_sha']}",
                     "content": _b64_lines(content), "encoding": "base64"}, {}

    def op_git_get_tree(self, req, params, body):
        repo = self._repo_param(params)
        sha = params["tree_sha"]
        if sha not in repo.store.trees:
            commit = repo.resolve(sha)
            if commit is None:
                raise ApiError(404, "Not Found")
            sha = repo.store.commits[commit].tree
        recursive = req.query.get("recursive", [None])[-1] not in (None, "", "0", "false")
        api = f"{self.url}/repos/{repo.full_name}/git"
        entries = []
        for path, mode, kind, s, size in repo.store.walk_tree(sha, recursive):
            item = {"path": path, "mode": mode, "type": kind, "sha": s,
                    "url": f"{api}/{kind}s/{s}"}
            if kind == "blob":
                item["size"] = size
            entries.append(item)
        truncated = len(entries) > self.tree_entry_limit
        return 200, {"sha": sha, "url": f"{api}/trees/{sha}",
                     "tree": entries[:self.tree_entry_limit], "truncated": truncated}, {}

    def op_git_get_ref(self, req, params, body):
        repo = self._repo_param(params)
        ref = params["ref"]
        if not ref.startswith("heads/") or ref[6:] not in repo.branches:
            raise ApiError(404, "Not Found")
        sha = repo.branches[ref[6:]]
        api = f"{self.url}/repos/{repo.full_name}/git"
        return 200, {"ref": "refs/" + ref, "node_id": self._node_id("REF", len(ref)),
                     "url": f"{api}/refs/{ref}",
                     "object": {"type": "commit", "sha": sha, "url": f"{api}/commits/{sha}"}}, {}

    def op_repos_get_commit(self, req, params, body):
        repo = self._repo_param(params)
        sha = repo.resolve(params["ref"])
        if sha is None:
            raise ApiError(422, f"No commit found for SHA: {params['ref']}")
        return 200, self._commit_json(repo, sha), {}

    def op_repos_compare_commits_with_basehead(self, req, params, body):
        repo = self._repo_param(params)
        if "..." not in params["basehead"]:
            raise ApiError(404, "Not Found")
        base_ref, head_ref = params["basehead"].split("...", 1)
        base, head = repo.resolve(base_ref), repo.resolve(head_ref)
        if base is None or head is None:
            raise ApiError(404, "Not Found")
        store = repo.store
        merge_base = store.merge_base(base, head) or base
        head_anc, base_anc = store.ancestors(head), store.ancestors(base)
        ahead = [s for s in head_anc if s not in set(store.ancestors(merge_base))]
        behind = [s for s in base_anc if s not in set(store.ancestors(merge_base))]
        status = ("identical" if not ahead and not behind else "ahead" if not behind
                  else "behind" if not ahead else "diverged")
        entries = store.diff(merge_base, head)
        api = f"{self.url}/repos/{repo.full_name}"
        web = f"{self.web_url}/{repo.full_name}"
        out = {"url": f"{api}/compare/{params['basehead']}",
               "html_url": f"{web}/compare/{params['basehead']}",
               "permalink_url": f"{web}/compare/{base}...{head}",
               "diff_url": f"{web}/compare/{params['basehead']}.diff",
               "patch_url": f"{web}/compare/{params['basehead']}.patch",
               "base_commit": self._commit_json(repo, base, False),
               "merge_base_commit": self._commit_json(repo, merge_base, False),
               "status": status, "ahead_by": len(ahead), "behind_by": len(behind),
               "total_commits": len(ahead),
               "commits": [self._commit_json(repo, s, False) for s in reversed(ahead)][:250],
               "files": [self._diff_entry(repo, e, head) for e in entries][:300]}
        return 200, out, {}

    def _issue_number(self, repo: Repo, params) -> int:
        number = int(params["issue_number"])
        if (repo.full_name, number) not in self.pulls and (repo.full_name, number) not in self.issues:
            raise ApiError(404, "Not Found")
        return number

    def op_issues_list_comments(self, req, params, body):
        repo = self._repo_param(params)
        number = self._issue_number(repo, params)
        items = [self._comment_json(c) for c in self._comments.values()
                 if c["repo"] == repo.full_name and c["number"] == number]
        chunk, headers = self._page(req, items, req.raw_path)
        return 200, chunk, headers

    def op_issues_create_comment(self, req, params, body):
        repo = self._repo_param(params)
        number = self._issue_number(repo, params)
        if len(body["body"]) > 65536:
            raise ApiError(422, "Validation Failed", errors=[
                {"resource": "IssueComment", "code": "custom", "field": "body",
                 "message": "body is too long (maximum is 65536 characters)"}])
        now = time.time()
        c = {"id": self._next_id(), "repo": repo.full_name, "number": number,
             "body": body["body"], "author": self._auth_app.bot_login, "user_type": "Bot",
             "app_id": self._auth_app.id, "created_at": now, "updated_at": now}
        self._comments[c["id"]] = c
        return 201, self._comment_json(c), {"Location": self._comment_json(c)["url"]}

    def _comment_param(self, repo: Repo, params) -> dict:
        c = self._comments.get(int(params["comment_id"]))
        if c is None or c["repo"] != repo.full_name:
            raise ApiError(404, "Not Found")
        return c

    def op_issues_get_comment(self, req, params, body):
        repo = self._repo_param(params)
        return 200, self._comment_json(self._comment_param(repo, params)), {}

    def op_issues_update_comment(self, req, params, body):
        repo = self._repo_param(params)
        c = self._comment_param(repo, params)
        if c.get("app_id") != self._auth_app.id:
            raise ApiError(403, "Resource not accessible by integration")
        c["body"], c["updated_at"] = body["body"], time.time()
        return 200, self._comment_json(c), {}

    def op_reactions_create_for_issue_comment(self, req, params, body):
        repo = self._repo_param(params)
        c = self._comment_param(repo, params)
        login = self._auth_app.bot_login
        existing = [r for r in self._reactions.get(c["id"], [])
                    if r["user"] == login and r["content"] == body["content"]]
        if existing:
            reaction, status = existing[0], 200
        else:
            reaction = {"id": self._next_id(), "user": login, "content": body["content"],
                        "created_at": time.time()}
            self._reactions.setdefault(c["id"], []).append(reaction)
            status = 201
        return status, {"id": reaction["id"], "node_id": self._node_id("REA", reaction["id"]),
                        "user": self.user_json(login, "Bot"), "content": reaction["content"],
                        "created_at": iso(reaction["created_at"])}, {}

    def op_repos_get_collaborator_permission_level(self, req, params, body):
        repo = self._repo_param(params)
        user = params["username"]
        role = self._permissions.get((repo.full_name, user))
        if role is None:
            role = "none" if repo.private else "read"
        permission = {"maintain": "write", "triage": "read"}.get(role, role)
        user_json = self.user_json(user)
        user_json["permissions"] = {"admin": role == "admin",
                                    "maintain": role in ("admin", "maintain"),
                                    "push": permission in ("admin", "write"),
                                    "triage": role != "none" and role != "read" or False,
                                    "pull": role != "none"}
        user_json["role_name"] = role
        return 200, {"permission": permission, "role_name": role, "user": user_json}, {}

    def op_teams_get_membership_for_user_in_org(self, req, params, body):
        if self._auth_inst.account != params["org"]:
            raise ApiError(404, "Not Found")
        member = self._teams.get((params["org"], params["team_slug"], params["username"]))
        if member is None:
            raise ApiError(404, "Not Found")
        return 200, {"url": f"{self.url}/orgs/{params['org']}/teams/{params['team_slug']}"
                            f"/memberships/{params['username']}",
                     "role": member["role"], "state": member["state"]}, {}

    def _apply_check_run(self, cr: dict, body: dict) -> None:
        for key in ("name", "details_url", "external_id", "started_at"):
            if key in body:
                cr[key] = body[key]
        if "status" in body:
            cr["status"] = body["status"]
        if "conclusion" in body:
            cr["conclusion"] = body["conclusion"]
            cr["status"] = "completed"
        if "completed_at" in body:
            cr["completed_at"] = body["completed_at"]
            cr["status"] = "completed"
        if cr["status"] == "completed" and not cr.get("conclusion"):
            raise ApiError(422, "Validation Failed", errors=[
                {"resource": "CheckRun", "code": "missing_field", "field": "conclusion"}])
        if cr["status"] == "completed" and not cr.get("completed_at"):
            cr["completed_at"] = iso(time.time())
        if not cr.get("started_at"):  # GitHub stamps creation time when none is given
            cr["started_at"] = iso(time.time())
        output = body.get("output")
        if output:
            annotations = output.get("annotations", [])
            if len(annotations) > 50:
                raise ApiError(422, "Only 50 annotations are allowed per request")
            for a in annotations:
                if ("start_column" in a or "end_column" in a) and a["start_line"] != a["end_line"]:
                    raise ApiError(422, "Validation Failed", errors=[
                        {"resource": "CheckRun", "code": "invalid", "field": "annotations",
                         "message": "start_column and end_column are only allowed when "
                                    "start_line equals end_line"}])
                too_long = (len(a["message"].encode()) > 65536 or len(a.get("title") or "") > 255
                            or len((a.get("raw_details") or "").encode()) > 65536)
                if a["start_line"] < 1 or a["end_line"] < a["start_line"] or too_long:
                    raise ApiError(422, "Validation Failed", errors=[
                        {"resource": "CheckRun", "code": "invalid", "field": "annotations"}])
            cr["output"].update({k: v for k, v in output.items() if k != "annotations"})
            cr["annotations"].extend(copy.deepcopy(annotations))
        if "actions" in body:
            _validate_actions(body["actions"])
            cr["actions"] = body["actions"]
        cr["patches"] += 1

    def op_checks_create(self, req, params, body):
        repo = self._repo_param(params)
        if body["head_sha"] not in repo.store.commits:
            raise ApiError(422, "No commit found for SHA: " + body["head_sha"])
        suite_key = (repo.full_name, self._auth_app.id, body["head_sha"])
        suite = self._check_suites.setdefault(suite_key, self._next_id())
        cr = {"id": self._next_id(), "repo": repo.full_name, "app_id": self._auth_app.id,
              "head_sha": body["head_sha"], "name": body["name"], "status": "queued",
              "conclusion": None, "started_at": None, "completed_at": None, "output": {},
              "annotations": [], "actions": [], "check_suite_id": suite, "patches": -1,
              "created_at": time.time()}
        self._apply_check_run(cr, body)
        self._check_runs[cr["id"]] = cr
        return 201, self._check_run_json(cr), {}

    def _check_run_param(self, repo, params) -> dict:
        cr = self._check_runs.get(int(params["check_run_id"]))
        if cr is None or cr["repo"] != repo.full_name:
            raise ApiError(404, "Not Found")
        return cr

    def op_checks_get(self, req, params, body):
        repo = self._repo_param(params)
        return 200, self._check_run_json(self._check_run_param(repo, params)), {}

    def op_checks_update(self, req, params, body):
        repo = self._repo_param(params)
        cr = self._check_run_param(repo, params)
        if cr["app_id"] != self._auth_app.id:
            raise ApiError(403, "Invalid app_id `%d` - check run can only be modified by the "
                                "GitHub App that created it." % self._auth_app.id)
        self._apply_check_run(cr, body)
        return 200, self._check_run_json(cr), {}

    def op_checks_list_annotations(self, req, params, body):
        repo = self._repo_param(params)
        cr = self._check_run_param(repo, params)
        items = []
        for a in cr["annotations"]:
            items.append({"path": a["path"], "start_line": a["start_line"],
                          "end_line": a["end_line"], "start_column": a.get("start_column"),
                          "end_column": a.get("end_column"),
                          "annotation_level": a["annotation_level"], "title": a.get("title"),
                          "message": a["message"], "raw_details": a.get("raw_details"),
                          "blob_href": f"{self.web_url}/{repo.full_name}/blob/{cr['head_sha']}/{a['path']}"})
        chunk, headers = self._page(req, items, req.raw_path)
        return 200, chunk, headers

    def op_checks_list_for_ref(self, req, params, body):
        repo = self._repo_param(params)
        sha = repo.resolve(params["ref"])
        if sha is None:
            raise ApiError(404, "Not Found")
        q = {k: v[-1] for k, v in req.query.items()}
        runs = [cr for cr in self._check_runs.values()
                if cr["repo"] == repo.full_name and cr["head_sha"] == sha
                and ("check_name" not in q or cr["name"] == q["check_name"])
                and ("status" not in q or cr["status"] == q["status"])
                and ("app_id" not in q or str(cr["app_id"]) == q["app_id"])]
        runs.sort(key=lambda cr: -cr["id"])
        if q.get("filter", "latest") == "latest":
            seen, latest = set(), []
            for cr in runs:
                if (cr["app_id"], cr["name"]) not in seen:
                    seen.add((cr["app_id"], cr["name"]))
                    latest.append(cr)
            runs = latest
        chunk, headers = self._page(req, [self._check_run_json(cr) for cr in runs], req.raw_path)
        return 200, {"total_count": len(runs), "check_runs": chunk}, headers

    def op_actions_create_workflow_dispatch(self, req, params, body):
        repo = self._repo_param(params)
        wf = repo.workflow(params["workflow_id"])
        if wf is None:
            raise ApiError(404, "Not Found")
        if not wf["dispatchable"]:
            raise ApiError(422, "Workflow does not have 'workflow_dispatch' trigger")
        ref = body["ref"]
        sha = repo.resolve(ref)
        if sha is None or re.fullmatch(r"[0-9a-f]{40}", ref):
            raise ApiError(422, f"No ref found for: {ref}")
        inputs = body.get("inputs") or {}
        if len(json.dumps(inputs)) > 65535:
            raise ApiError(422, "inputs are too large")
        if len(inputs) > self.dispatch_max_inputs:
            raise ApiError(422, f"inputs has more than {self.dispatch_max_inputs} properties")
        declared = wf.get("inputs")
        if declared is not None:
            # "Input keys and values configured in the workflow file": others are refused, and a
            # required input without a default must be given.
            unexpected = sorted(set(inputs) - set(declared))
            if unexpected:
                raise ApiError(422, f"Unexpected inputs provided: {json.dumps(unexpected)}")
            for key, spec in declared.items():
                spec = spec or {}
                if spec.get("required") and key not in inputs and spec.get("default") in (None, ""):
                    raise ApiError(422, f"Required input '{key}' not provided")
        # What the run sees: the defaults of what was left out (the recorded dispatch keeps what was sent).
        effective = {**{k: str((v or {}).get("default", "")) for k, v in (declared or {}).items()}, **inputs}
        branch = ref.removeprefix("refs/heads/")
        run = self.add_workflow_run(repo, wf, head_sha=sha, event="workflow_dispatch",
                                    status="queued", conclusion=None, head_branch=branch,
                                    actor=self._auth_app.bot_login)
        if wf.get("run_name"):
            self._runs[run["id"]]["display_title"] = re.sub(
                r"\$\{\{\s*(?:github\.event\.)?inputs\.([A-Za-z0-9_-]+)\s*\}\}",
                lambda m: str(effective.get(m.group(1), "")), wf["run_name"])
        self._dispatches.append({"repo": repo.full_name, "workflow": wf["file"],
                                 "workflow_id": wf["id"], "ref": ref, "inputs": dict(inputs),
                                 "run_id": run["id"], "at": time.time()})
        version = req.headers.get("x-github-api-version", "2022-11-28")
        # GHES 3.17-3.19 never return run details (dispatch_run_details = False models them).
        if self.dispatch_run_details and (body.get("return_run_details") or version >= "2026-03-10"):
            api = f"{self.url}/repos/{repo.full_name}"
            return 200, {"workflow_run_id": run["id"], "run_url": f"{api}/actions/runs/{run['id']}",
                         "html_url": f"{self.web_url}/{repo.full_name}/actions/runs/{run['id']}"}, {}
        return 204, None, {}

    def op_actions_list_workflow_runs_for_repo(self, req, params, body):
        repo = self._repo_param(params)
        q = {k: v[-1] for k, v in req.query.items()}
        runs = [r for r in self._runs.values() if r["repo"] == repo.full_name
                and ("head_sha" not in q or r["head_sha"] == q["head_sha"])
                and ("event" not in q or r["event"] == q["event"])
                and ("branch" not in q or r["head_branch"] == q["branch"])
                and ("actor" not in q or r["actor"] == q["actor"])
                and ("status" not in q or q["status"] in (r["status"], r["conclusion"]))]
        runs.sort(key=lambda r: -r["id"])
        chunk, headers = self._page(req, [self._run_json(r) for r in runs], req.raw_path)
        return 200, {"total_count": len(runs), "workflow_runs": chunk}, headers

    def _run_param(self, repo, params) -> dict:
        run = self._runs.get(int(params["run_id"]))
        if run is None or run["repo"] != repo.full_name:
            raise ApiError(404, "Not Found")
        return run

    def op_actions_get_workflow_run(self, req, params, body):
        repo = self._repo_param(params)
        return 200, self._run_json(self._run_param(repo, params)), {}

    def op_actions_cancel_workflow_run(self, req, params, body):
        """202 and an empty object; a run that already completed cannot be cancelled (409). GitHub
        cancels asynchronously; here the run is completed as cancelled at once."""
        repo = self._repo_param(params)
        run = self._run_param(repo, params)
        if run["status"] == "completed":
            raise ApiError(409, "Cannot cancel a workflow run that is completed.")
        run["status"], run["conclusion"], run["updated_at"] = "completed", "cancelled", time.time()
        run.setdefault("cancelled_by", self._auth_app.bot_login if self._auth_app else None)
        return 202, {}, {}

    def op_actions_list_jobs_for_workflow_run(self, req, params, body):
        repo = self._repo_param(params)
        run = self._run_param(repo, params)
        jobs = [self._job_json(self._jobs[j]) for j in run["jobs"]]
        if req.query.get("filter", ["latest"])[-1] == "latest":
            jobs = [j for j in jobs if j["run_attempt"] == run["run_attempt"]]
        chunk, headers = self._page(req, jobs, req.raw_path)
        return 200, {"total_count": len(jobs), "jobs": chunk}, headers

    def op_actions_download_job_logs_for_workflow_run(self, req, params, body):
        repo = self._repo_param(params)
        job = self._jobs.get(int(params["job_id"]))
        if job is None or self._runs[job["run_id"]]["repo"] != repo.full_name:
            raise ApiError(404, "Not Found")
        if job.get("log") is None:  # its log was deleted, or aged past the retention period
            raise ApiError(404, "Not Found")
        signature = secrets.token_urlsafe(24)
        expires = time.time() + 60
        self._log_links[signature] = (job["id"], expires)
        location = (f"{self.web_url}/_apis/pipelines/1/jobs/{job['id']}/signedlogcontent"
                    f"?urlExpires={quote(iso(expires))}&urlSigningMethod=HMACV1"
                    f"&urlSignature={signature}")
        return 302, None, {"Location": location}

    def op_users_get_authenticated(self, req, params, body):
        out = self.rest.skeleton("private-user")
        out.update(self.user_json(self._auth_user))
        return 200, out, {}

    def _user_installations(self) -> list:
        return [i for i in self.installations.values() if i.app is self._auth_app
                and any(self.user_can_access(self._auth_user, r) for r in i.repos)]

    def op_apps_list_installations_for_authenticated_user(self, req, params, body):
        items = [self._installation_json(i) for i in self._user_installations()]
        chunk, headers = self._page(req, items, req.raw_path)
        return 200, {"total_count": len(items), "installations": chunk}, headers

    def op_apps_list_installation_repos_for_authenticated_user(self, req, params, body):
        inst = next((i for i in self._user_installations() if i.id == int(params["installation_id"])), None)
        if inst is None:
            raise ApiError(404, "Not Found")
        items = [self._repo_json(self.repos[r], "repository") for r in inst.repos
                 if self.user_can_access(self._auth_user, r)]
        chunk, headers = self._page(req, items, req.raw_path)
        return 200, {"total_count": len(items), "repository_selection": "selected", "repositories": chunk}, headers

    def op_rate_limit_get(self, req, params, body):
        bucket = self._last_bucket or self._bucket_for_request(req)
        core = {"limit": bucket["limit"], "used": bucket["used"],
                "remaining": max(0, bucket["limit"] - bucket["used"]), "reset": bucket["reset"]}
        other = {"limit": 30, "used": 0, "remaining": 30, "reset": bucket["reset"]}
        return 200, {"resources": {"core": core, "search": other,
                                   "graphql": dict(core, limit=5000, remaining=5000, used=0)},
                     "rate": core}, {}

    def _bucket_for_request(self, req: Request) -> dict:
        header = req.headers.get("authorization", "")
        credential = header.partition(" ")[2]
        token = self._tokens.get(credential)
        if token:
            return self._bucket(f"installation ID {token['installation_id']}")
        return self._bucket(req.client)


def _b64_lines(content: bytes) -> str:
    encoded = base64.b64encode(content).decode()
    return "\n".join(encoded[i:i + 60] for i in range(0, len(encoded), 60)) + ("\n" if encoded else "")


# GitHub's check run `actions` (REST "Create a check run"): at most 3 buttons, each with a label of
# at most 20 characters, a description of at most 40 and an identifier of at most 20, all required.
_ACTION_LIMITS = {"label": 20, "description": 40, "identifier": 20}


def _validate_actions(actions) -> None:
    def invalid(message: str):
        return ApiError(422, "Validation Failed", errors=[
            {"resource": "CheckRun", "code": "invalid", "field": "actions", "message": message}])

    if not isinstance(actions, list) or len(actions) > 3:
        raise invalid("actions: at most 3 are allowed")
    for action in actions:
        if not isinstance(action, dict):
            raise invalid("an action is an object")
        for key, limit in _ACTION_LIMITS.items():
            value = action.get(key)
            if not isinstance(value, str) or not value:
                raise invalid(f"{key} is required")
            if len(value) > limit:
                raise invalid(f"{key} is too long (maximum is {limit} characters)")
