"""Writes through the Git Data API (blobs, trees, commits, refs) and pull requests opened, edited
and closed through the REST API: what the App's calibration pull request does.

Behaviour as GitHub documents it: a tree is built on `base_tree` (entries with `sha: null`
delete a path), a commit names an existing tree and parents, a new ref must not exist and must
start with `refs/`, a ref update that is not a fast-forward needs `force: true`, one open pull
request per head branch and base, a pull request needs commits its base does not have.
"""

from __future__ import annotations

import base64
import time

from .model import ApiError, PullRequest


class GitWriteOperations:
    """Mixin of GitHubSimulator (after RestOperations)."""

    def _tree_files(self, repo, tree_sha: str) -> dict[str, bytes]:
        store = repo.store
        return {path: store.blobs[sha] for path, _mode, kind, sha, _size in store.walk_tree(tree_sha, True)
                if kind == "blob"}

    def _tree_modes(self, repo, tree_sha: str) -> dict[str, str]:
        """path -> mode of the blobs that are not 100644 (executables)."""
        return {path: mode for path, mode, kind, _sha, _size in repo.store.walk_tree(tree_sha, True)
                if kind == "blob" and mode != "100644"}

    def op_git_create_blob(self, req, params, body):
        repo = self._repo_param(params)
        encoding = body.get("encoding", "utf-8")
        if encoding not in ("utf-8", "base64"):
            raise ApiError(422, f"encoding must be utf-8 or base64, not {encoding}")
        try:
            content = base64.b64decode(body["content"], validate=False) if encoding == "base64" else body["content"].encode()
        except ValueError:
            raise ApiError(422, "content is not valid base64") from None
        sha = repo.store.put_blob(content)
        url = f"{self.url}/repos/{repo.full_name}/git/blobs/{sha}"
        return 201, {"url": url, "sha": sha}, {"Location": url}

    def op_git_create_tree(self, req, params, body):
        repo = self._repo_param(params)
        files: dict[str, bytes] = {}
        modes: dict[str, str] = {}
        if body.get("base_tree"):
            if body["base_tree"] not in repo.store.trees:
                raise ApiError(422, "Invalid tree info", errors=["base_tree is not a tree SHA of this repository"])
            files = self._tree_files(repo, body["base_tree"])
            modes = self._tree_modes(repo, body["base_tree"])
        for entry in body["tree"]:
            # an entry replaces the path's blob AND its mode: what it says is what the tree holds
            modes.pop(entry.get("path"), None)
            if entry.get("mode", "100644") != "100644":
                modes[entry["path"]] = entry["mode"]
            path = entry.get("path")
            if not path or path.startswith("/") or path.endswith("/"):
                raise ApiError(422, "Invalid tree info", errors=[f"tree.path {path!r} is not a file path"])
            if entry.get("type", "blob") != "blob" or entry.get("mode", "100644") not in ("100644", "100755"):
                raise ApiError(422, "Invalid tree info", errors=["the simulator models blob entries (100644, 100755) only"])
            if "content" in entry and "sha" in entry:
                raise ApiError(422, "Invalid tree info", errors=["sha and content are mutually exclusive"])
            if "content" in entry:
                files[path] = entry["content"].encode()
            elif entry.get("sha") is None:
                if "sha" not in entry:
                    raise ApiError(422, "Invalid tree info", errors=[f"tree entry {path!r} needs sha or content"])
                files.pop(path, None)
            else:
                content = repo.store.blobs.get(entry["sha"])
                if content is None:
                    raise ApiError(422, "Invalid tree info", errors=[f"{entry['sha']} is not a blob of this repository"])
                files[path] = content
        sha = repo.store.put_tree(files, {p: m for p, m in modes.items() if p in files})
        return 201, self._tree_json(repo, sha), {"Location": f"{self.url}/repos/{repo.full_name}/git/trees/{sha}"}

    def _tree_json(self, repo, sha: str) -> dict:
        api = f"{self.url}/repos/{repo.full_name}/git"
        entries = [{"path": p, "mode": m, "type": k, "sha": s, "url": f"{api}/{k}s/{s}", **({"size": z} if k == "blob" else {})}
                   for p, m, k, s, z in repo.store.walk_tree(sha, False)]
        return {"sha": sha, "url": f"{api}/trees/{sha}", "tree": entries, "truncated": False}

    def op_git_create_commit(self, req, params, body):
        repo = self._repo_param(params)
        tree = body["tree"]
        if tree not in repo.store.trees:
            raise ApiError(422, "Tree SHA does not exist")
        parents = body.get("parents", [])
        for p in parents:
            if p not in repo.store.commits:
                raise ApiError(422, "Parent SHA does not exist or is not a commit object")
        # Without author or committer the commit is the authenticated App's bot, and GitHub signs
        # it ("bot signatures": only with no custom author, committer or signature).
        bot, bot_email = self._auth_app.bot_login, f"{self._auth_app.id}+{self._auth_app.bot_login}@users.noreply.github.com"
        custom_author, custom_committer = body.get("author") or {}, body.get("committer") or {}
        author = custom_author.get("name") or bot
        email = custom_author.get("email") or bot_email
        committer = custom_committer.get("name") or (author if custom_author else bot)
        committer_email = custom_committer.get("email") or (email if custom_author else bot_email)
        signed = not custom_author and not custom_committer and not body.get("signature") and self._auth_inst is not None
        repo.clock += 60
        sha = repo.store.put_commit(self._tree_files(repo, tree), parents, body["message"], author, email, repo.clock,
                                    committer=committer, committer_email=committer_email,
                                    modes=self._tree_modes(repo, tree), signed=signed)
        assert repo.store.commits[sha].tree == tree, "the simulator's tree of the same files differs"
        return 201, self._git_commit_json(repo, sha), {"Location": f"{self.url}/repos/{repo.full_name}/git/commits/{sha}"}

    def _git_commit_json(self, repo, sha: str) -> dict:
        c = repo.store.commits[sha]
        api = f"{self.url}/repos/{repo.full_name}/git"
        date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(c.timestamp))
        return {"sha": sha, "node_id": self._node_id("C", int(sha[:8], 16)), "url": f"{api}/commits/{sha}",
                "html_url": f"{self.web_url}/{repo.full_name}/commit/{sha}",
                "author": {"name": c.author, "email": c.email, "date": date},
                "committer": {"name": c.committer_name, "email": c.committer_mail, "date": date},
                "message": c.message, "tree": {"sha": c.tree, "url": f"{api}/trees/{c.tree}"},
                "parents": [{"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{self.web_url}/{repo.full_name}/commit/{p}"}
                            for p in c.parents],
                "verification": self.verification_json(c)}

    def _ref_json(self, repo, branch: str) -> dict:
        api = f"{self.url}/repos/{repo.full_name}/git"
        sha = repo.branches[branch]
        return {"ref": f"refs/heads/{branch}", "node_id": self._node_id("REF", len(branch)), "url": f"{api}/refs/heads/{branch}",
                "object": {"type": "commit", "sha": sha, "url": f"{api}/commits/{sha}"}}

    def op_git_create_ref(self, req, params, body):
        repo = self._repo_param(params)
        ref = body["ref"]
        if not ref.startswith("refs/heads/") or ref.count("/") < 2:
            raise ApiError(422, "Reference name must start with 'refs/' and have at least two slashes"
                           if not ref.startswith("refs/") else "the simulator models branch refs (refs/heads/...) only")
        if body["sha"] not in repo.store.commits:
            raise ApiError(422, "Object does not exist")
        branch = ref[len("refs/heads/"):]
        if branch in repo.branches:
            raise ApiError(422, "Reference already exists")
        repo.branches[branch] = body["sha"]
        return 201, self._ref_json(repo, branch), {"Location": self._ref_json(repo, branch)["url"]}

    def op_git_update_ref(self, req, params, body):
        repo = self._repo_param(params)
        ref = params["ref"]
        branch = ref[len("heads/"):] if ref.startswith("heads/") else None
        if branch is None or branch not in repo.branches:
            raise ApiError(422, "Reference does not exist")
        sha = body["sha"]
        if sha not in repo.store.commits:
            raise ApiError(422, "Object does not exist")
        if not body.get("force") and repo.branches[branch] not in repo.store.ancestors(sha):
            raise ApiError(422, "Update is not a fast forward")
        repo.branches[branch] = sha
        for pr in self.pulls.values():  # open pull requests from that branch follow, as on a push
            if pr.head_repository is repo and pr.head_ref == branch and pr.state == "open":
                pr.head_sha, pr.updated_at = sha, time.time()
        return 200, self._ref_json(repo, branch), {}

    def op_pulls_list(self, req, params, body):
        repo = self._repo_param(params)
        state = req.query.get("state", ["open"])[-1]
        head = req.query.get("head", [None])[-1]
        base = req.query.get("base", [None])[-1]
        pulls = [pr for (name, _n), pr in sorted(self.pulls.items(), key=lambda kv: -kv[1].number) if name == repo.full_name]
        if state != "all":
            pulls = [pr for pr in pulls if pr.state == state]
        if head:
            owner, _, ref = head.partition(":")
            pulls = [pr for pr in pulls if pr.head_repository.owner == owner and pr.head_ref == ref]
        if base:
            pulls = [pr for pr in pulls if pr.base_ref == base]
        items, headers = self._page(req, pulls, f"/repos/{repo.full_name}/pulls")
        simple = self.rest.skeleton("pull-request-simple")
        return 200, [{k: v for k, v in self._pull_json(pr).items() if k in simple or k in _SIMPLE_OPTIONAL} for pr in items], headers

    def op_pulls_create(self, req, params, body):
        repo = self._repo_param(params)
        head, base = body.get("head"), body.get("base")
        if not head or not base or not body.get("title"):
            raise ApiError(422, "Validation Failed", errors=[{"resource": "PullRequest", "code": "missing_field",
                                                              "field": "title" if not body.get("title") else "head"}])
        ref = head.split(":", 1)[-1]
        if ref not in repo.branches or base not in repo.branches:
            raise ApiError(422, "Validation Failed", errors=[{"resource": "PullRequest", "code": "invalid", "field": "head" if ref not in repo.branches else "base"}])
        if any(pr.head_repository is repo and pr.head_ref == ref and pr.base_ref == base and pr.state == "open"
               for pr in self.pulls.values()):
            raise ApiError(422, "Validation Failed", errors=[{"resource": "PullRequest", "code": "custom",
                                                              "message": f"A pull request already exists for {repo.owner}:{ref}."}])
        if repo.branches[ref] in repo.store.ancestors(repo.branches[base]):
            raise ApiError(422, "Validation Failed", errors=[{"resource": "PullRequest", "code": "custom",
                                                              "message": f"No commits between {base} and {ref}"}])
        now = time.time()
        pr = PullRequest(repo, self._next_number(repo), ref, base, repo.branches[ref], repo.branches[base],
                         self._auth_app.bot_login, body["title"], body.get("body") or "", bool(body.get("draft")),
                         created_at=now, updated_at=now, id=self._next_id())
        self.pulls[(repo.full_name, pr.number)] = pr
        return 201, self._pull_json(pr), {"Location": self._pull_json(pr)["url"]}

    def op_pulls_update(self, req, params, body):
        repo = self._repo_param(params)
        pr = self.pulls.get((repo.full_name, int(params["pull_number"])))
        if pr is None:
            raise ApiError(404, "Not Found")
        if "title" in body:
            pr.title = body["title"]
        if "body" in body:
            pr.body = body["body"]
        if body.get("state") == "closed" and pr.state == "open":
            pr.state = "closed"
        elif body.get("state") == "open" and pr.state == "closed":
            if pr.merged:
                raise ApiError(422, "Validation Failed", errors=[{"resource": "PullRequest", "code": "custom",
                                                                  "message": "state cannot be changed. The pull request has been merged."}])
            pr.state = "open"
        pr.updated_at = time.time()
        return 200, self._pull_json(pr), {}


# optional properties of pull-request-simple the list carries (the skeleton has the required ones)
_SIMPLE_OPTIONAL = {"assignees", "requested_reviewers", "requested_teams", "draft"}
