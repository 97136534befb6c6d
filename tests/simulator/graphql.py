"""POST /graphql: the part of GitHub's GraphQL API the App uses, on the vendored schema subset.

The App reads many files in one request: `repository(owner:, name:) { f0: object(expression:
"<sha>:<path>") { ... on Blob { oid byteSize isBinary isTruncated text } } ... }`; a directory's
entries (`... on Tree { entries { name path mode type oid object } }`, mode the octal file mode as
an integer, path from the repository's root); and a comment by its node ID (`node(id:) { ... on
IssueComment { body } }`, the `node_id` of the REST and webhook payloads). Every query is
parsed and validated by graphql-core against `vendor/graphql-schema.graphql` (a subset of GitHub's
published schema, see vendor/regenerate.py); a query that does not validate is a violation of the
test, and answered as GitHub does: 200 with `errors`.

Modelled as GitHub documents it: installation tokens only (a JWT or no token is 401), a separate
`graphql` rate-limit bucket charged one point per query, a repository outside the installation
resolves to null with a NOT_FOUND error, an expression that names nothing resolves to null, and
`text` is null for binary content and cut at `text_limit` bytes with `isTruncated: true`.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

from graphql import build_schema, graphql_sync

from .gitobjects import is_binary
from .server import Request, Response

SCHEMA_PATH = Path(__file__).resolve().parent / "vendor" / "graphql-schema.graphql"
TEXT_LIMIT = 512 * 1024  # where `text` is cut (isTruncated); GitHub does not publish its figure


def _node_id(kind: str, oid: str) -> str:
    return base64.b64encode(f"{kind}:{oid}".encode()).decode()


class GraphQLEndpoint:
    def __init__(self, sim, text_limit: int = TEXT_LIMIT):
        self.sim = sim
        self.text_limit = text_limit
        self.schema = build_schema(SCHEMA_PATH.read_text())
        self.schema.type_map["Query"].fields["repository"].resolve = self._repository
        self.schema.type_map["Query"].fields["node"].resolve = self._node
        self.schema.type_map["Tree"].fields["entries"].resolve = self._entries
        self.schema.type_map["Node"].resolve_type = lambda obj, info, abstract: obj["__typename"]
        self.schema.type_map["Repository"].fields["object"].resolve = self._object
        self.schema.type_map["Repository"].fields["ref"].resolve = self._ref
        self.schema.type_map["Repository"].fields["defaultBranchRef"].resolve = self._default_branch_ref
        self.schema.type_map["Commit"].fields["file"].resolve = self._file
        self.schema.type_map["Commit"].fields["tree"].resolve = lambda commit, info: self._tree(commit["repo"], commit["tree"], "")
        self.schema.type_map["GitObject"].resolve_type = lambda obj, info, abstract: obj["__typename"]

    # -- resolvers (state is read under the simulator's lock, held by handle) --------------------
    def _repository(self, root, info, owner: str, name: str, followRenames: bool = True):  # noqa: N803
        full = f"{owner}/{name}"
        inst, token = info.context["installation"], info.context["token"]
        if full not in inst.repos or full not in self.sim.repos \
                or (token["repositories"] is not None and full not in token["repositories"]):
            raise LookupError(f"Could not resolve to a Repository with the name '{full}'.")
        repo = self.sim.repos[full]
        return {"repo": repo, "id": _node_id("Repository", full), "nameWithOwner": full}

    def _object(self, parent, info, expression: str | None = None, oid: str | None = None):
        if info.context["token"]["permissions"].get("contents") not in ("read", "write"):
            raise PermissionError("Resource not accessible by integration")
        repo = parent["repo"]
        store = repo.store
        if oid is not None:
            if oid in store.blobs:
                return self._blob(repo, oid)
            return self._tree(repo, oid, None) if oid in store.trees else None
        if expression is None:
            return None
        rev, sep, path = expression.partition(":")
        commit = repo.resolve(rev or None)
        if commit is None:
            return None
        tree = store.commits[commit].tree
        if not sep:
            return None  # a bare revision names a commit: not modelled (the App never asks)
        found = store.subtree(tree, path)
        if found is None:
            return None
        kind, sha = found
        if kind == "blob":
            return self._blob(repo, sha)
        return self._tree(repo, sha, path.strip("/")) if kind == "tree" else None

    def _node(self, root, info, id: str):  # noqa: A002 - GitHub's argument name
        """A node by its global ID; of the kinds the App asks for, an issue or PR comment only."""
        inst, token = info.context["installation"], info.context["token"]
        prefix, _, encoded = id.partition("_")
        comment = None
        if prefix == "IC":
            try:
                number = int(base64.b64decode(encoded + "=" * (-len(encoded) % 4)).decode())
            except ValueError:
                number = None
            comment = self.sim._comments.get(number)
        if comment is not None:
            full = comment["repo"]
            readable = full in inst.repos and (token["repositories"] is None or full in token["repositories"])
            permissions = token["permissions"]
            if readable and (permissions.get("issues") in ("read", "write")
                             or permissions.get("pull_requests") in ("read", "write")):
                return {"__typename": "IssueComment", "id": id, "body": comment["body"]}
        raise LookupError(f"Could not resolve to a node with the global id of '{id}'")

    def _entries(self, tree, info):
        """Tree.entries: one level, in git's order; `path` is from the repository's root."""
        repo, prefix = tree["repo"], (tree["path"] + "/" if tree.get("path") else "")
        out = []
        for mode, name, kind, sha in repo.store.trees[tree["oid"]]:
            obj = self._blob(repo, sha) if kind == "blob" else self._tree(repo, sha, prefix + name) if kind == "tree" else None
            out.append({"name": name, "path": prefix + name, "oid": sha, "mode": int(mode, 8), "type": kind,
                        "size": len(repo.store.blobs[sha]) if kind == "blob" else 0, "object": obj})
        return out

    def _tree(self, repo, sha: str, path: str | None) -> dict:
        return {"__typename": "Tree", **self._common(repo, sha, "Tree"), "repo": repo, "path": path}

    def _ref(self, parent, info, qualifiedName: str):  # noqa: N803
        """A branch (`refs/heads/x`, or `x` as GitHub also takes it) and its commit; tags are not modelled."""
        name = qualifiedName[len("refs/heads/"):] if qualifiedName.startswith("refs/heads/") else qualifiedName
        return self._branch(parent["repo"], name)

    def _default_branch_ref(self, parent, info):
        return self._branch(parent["repo"], parent["repo"].default_branch)

    def _branch(self, repo, name: str) -> dict | None:
        sha = repo.branches.get(name)
        if sha is None:
            return None
        commit = {"__typename": "Commit", **self._common(repo, sha, "Commit"), "tree": repo.store.commits[sha].tree,
                  "repo": repo}
        return {"id": _node_id("Ref", f"{repo.full_name}:refs/heads/{name}"), "name": name, "prefix": "refs/heads/",
                "target": commit}

    def _file(self, commit, info, path: str):
        """Commit.file(path): the tree entry at `path` of the commit (None when there is none)."""
        if info.context["token"]["permissions"].get("contents") not in ("read", "write"):
            raise PermissionError("Resource not accessible by integration")
        repo = commit["repo"]
        found = repo.store.subtree(commit["tree"], path)
        if found is None or path.strip("/") == "":
            return None
        kind, sha = found
        clean = path.strip("/")
        obj = self._blob(repo, sha) if kind == "blob" else self._tree(repo, sha, clean)
        parent, _, name = clean.rpartition("/")
        _, parent_sha = repo.store.subtree(commit["tree"], parent)
        mode = next(int(m, 8) for m, n, _, _ in repo.store.trees[parent_sha] if n == name)
        size = len(repo.store.blobs[sha]) if kind == "blob" else 0
        return {"name": name, "path": clean, "oid": sha, "mode": mode, "type": kind, "size": size, "object": obj}

    def _common(self, repo, sha: str, kind: str) -> dict:
        return {"oid": sha, "abbreviatedOid": sha[:7], "id": _node_id(kind, sha),
                "commitResourcePath": f"/{repo.full_name}/commit/{sha}",
                "commitUrl": f"{self.sim.web_url}/{repo.full_name}/commit/{sha}",
                "repository": {"repo": repo, "id": _node_id("Repository", repo.full_name),
                               "nameWithOwner": repo.full_name}}

    def _blob(self, repo, sha: str) -> dict:
        content = repo.store.blobs[sha]
        binary = is_binary(content)
        truncated = not binary and len(content) > self.text_limit
        text = None if binary else content[: self.text_limit].decode("utf-8", errors="ignore")
        return {"__typename": "Blob", **self._common(repo, sha, "Blob"), "byteSize": len(content),
                "isBinary": binary, "isTruncated": truncated, "text": text}

    # -- the endpoint ----------------------------------------------------------------------------
    def handle(self, req: Request) -> Response:
        sim = self.sim
        started = time.time()
        entry = {"method": req.method, "path": req.raw_path, "query": req.query, "status": None,
                 "operation": "graphql", "auth": (req.headers.get("authorization") or "").split(" ")[0] or None}
        with sim.lock:
            sim.requests_log.append(entry)
        if req.method != "POST":
            entry["status"] = 404
            return sim._json(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/graphql"})
        faulted = sim._faulted(req, entry)
        if faulted is not None:
            return faulted
        scheme, _, credential = (req.headers.get("authorization") or "").partition(" ")
        with sim.lock:
            token = sim._tokens.get(credential) if scheme.lower() in ("token", "bearer") else None
            inst = sim.installations.get(token["installation_id"]) if token and token["expires_at"] > time.time() else None
            if inst is None:
                entry["status"] = 401
                return sim._json(401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/graphql"})
            bucket = sim._bucket(f"graphql installation ID {inst.id}")
            if bucket["used"] >= bucket["limit"]:
                entry["status"] = 200
                return sim._json(200, {"errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded"}]},
                                 self._rate_headers(bucket))
            try:
                body = json.loads(req.body or b"{}")
            except ValueError:
                body = None
            if not isinstance(body, dict) or not isinstance(body.get("query"), str):
                sim._violation("POST /graphql: the body is not {\"query\": ..., \"variables\": ...}")
                entry["status"] = 400
                return sim._json(400, {"message": "Problems parsing JSON", "documentation_url": "https://docs.github.com/graphql"})
            entry["variables"] = dict(body.get("variables") or {})  # what was asked, for tests to read
            result = graphql_sync(self.schema, body["query"], variable_values=body.get("variables") or {},
                                  context_value={"installation": inst, "token": token})
            bucket["used"] += 1
        errors = [self._error(e) for e in result.errors or []]
        if result.data is None and errors:
            # did not validate (or parse): the App sent a query GitHub would refuse
            sim._violation("POST /graphql: query invalid: " + "; ".join(e["message"] for e in errors))
        payload = {"data": result.data} if result.data is not None else {}
        if errors:
            payload["errors"] = errors
        entry["status"] = 200
        entry["elapsed"] = time.time() - started
        headers = {"Content-Type": "application/json; charset=utf-8", **self._rate_headers(bucket)}
        return Response(200, json.dumps(payload).encode(), headers)

    @staticmethod
    def _error(error) -> dict:
        out = {"message": error.message}
        if error.path:
            out["path"] = list(error.path)
        if error.original_error is not None and isinstance(error.original_error, LookupError):
            out["type"] = "NOT_FOUND"
        if error.original_error is not None and isinstance(error.original_error, PermissionError):
            out["type"] = "FORBIDDEN"
        if error.locations:
            out["locations"] = [{"line": loc.line, "column": loc.column} for loc in error.locations]
        return out

    @staticmethod
    def _rate_headers(bucket: dict) -> dict:
        return {"x-ratelimit-limit": str(bucket["limit"]),
                "x-ratelimit-remaining": str(max(0, bucket["limit"] - bucket["used"])),
                "x-ratelimit-used": str(bucket["used"]), "x-ratelimit-reset": str(bucket["reset"]),
                "x-ratelimit-resource": "graphql"}
