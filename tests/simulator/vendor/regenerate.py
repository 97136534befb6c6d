"""Regenerate the vendored subset of GitHub's official API descriptions used by the simulator.

Usage: python tests/simulator/vendor/regenerate.py [--npm] [REST_JSON [WEBHOOKS_JSON [EXAMPLES_JSON [GRAPHQL_SDL]]]]

Sources (npm, MIT): @octokit/openapi (generated/api.github.com.json), @octokit/openapi-webhooks
(generated/api.github.com.json), @octokit/webhooks-examples (api.github.com/index.json) and
@octokit/graphql-schema (schema.graphql, GitHub's public GraphQL schema).
`app-events.json` lists every webhook event a GitHub App may subscribe to (the description's
`x-github.supported-webhook-types` holds "app"), for the simulator's manifest validation; the valid
permission names and levels come from `app-permissions` in the REST subset.
Without file arguments they come from `npm pack` of the pinned versions into a temporary directory
(`--npm` is accepted and means the same).

Only the operations the project calls (OPERATIONS) and the webhook events it receives (EVENTS) are
kept, with every component they reference transitively; prose (descriptions, examples, summaries)
is dropped so the committed files stay small. Of the GraphQL schema, only the types and fields of
GRAPHQL_FIELDS are kept (graphql-core parses and prints it), so the simulator's /graphql endpoint
validates every query the App sends against GitHub's own schema.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[2]

PACKAGES = {
    "rest": ("@octokit/openapi@23.0.2", "package/generated/api.github.com.json"),
    "webhooks": ("@octokit/openapi-webhooks@12.1.0", "package/generated/api.github.com.json"),
    "examples": ("@octokit/webhooks-examples@7.6.1", "package/api.github.com/index.json"),
    "graphql": ("@octokit/graphql-schema@15.26.1", "package/schema.graphql"),
}

# GraphQL type -> the fields kept (None: every field whose type is kept too). The App reads many
# files in one request with `repository { f0: object(expression: "<sha>:<path>") { ... on Blob } }`,
# and a branch's commit with one file of it (its trusted configuration) with
# `repository { ref(qualifiedName:) { target { oid ... on Commit { file(path:) { object { ... on Blob } } } } } }`,
# a directory's entries (`... on Tree { entries }`, the root's as `Commit.tree`) and a comment by its
# node ID (`node(id:) { ... on IssueComment { body } }`), all in one request (bot/github/branch_read.py).
GRAPHQL_FIELDS = {
    "Query": ["repository", "node"],
    "IssueComment": ["body", "id"],
    "Repository": ["id", "nameWithOwner", "object", "ref", "defaultBranchRef"],
    "Ref": ["id", "name", "prefix", "target"],
    "Commit": ["abbreviatedOid", "commitResourcePath", "commitUrl", "id", "oid", "repository", "file", "tree"],
    "TreeEntry": ["mode", "name", "object", "oid", "path", "size", "type"],
    "GitObject": None,
    "Blob": None,
    "Tree": None,
    "Node": None,
}
GRAPHQL_SCALARS = ["URI", "GitObjectID"]

# (method, path template) of every REST operation the project calls.
OPERATIONS = [
    ("post", "/app/installations/{installation_id}/access_tokens"),
    ("get", "/app"),
    ("get", "/app/installations"),
    ("get", "/repos/{owner}/{repo}/installation"),
    ("post", "/app-manifests/{code}/conversions"),
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/files"),
    ("post", "/repos/{owner}/{repo}/pulls/{pull_number}/comments"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/comments"),
    ("post", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
    ("get", "/repos/{owner}/{repo}/contents/{path}"),
    ("get", "/repos/{owner}/{repo}/git/blobs/{file_sha}"),
    ("get", "/repos/{owner}/{repo}/git/trees/{tree_sha}"),
    ("get", "/repos/{owner}/{repo}/git/ref/{ref}"),
    # the calibration pull request: commits through the Git Data API, one PR on a fixed branch
    ("post", "/repos/{owner}/{repo}/git/blobs"),
    ("post", "/repos/{owner}/{repo}/git/trees"),
    ("post", "/repos/{owner}/{repo}/git/commits"),
    ("post", "/repos/{owner}/{repo}/git/refs"),
    ("patch", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("get", "/repos/{owner}/{repo}/pulls"),
    ("post", "/repos/{owner}/{repo}/pulls"),
    ("patch", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}"),
    ("get", "/repos/{owner}/{repo}/compare/{basehead}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("get", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("post", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ("get", "/repos/{owner}/{repo}/collaborators/{username}/permission"),
    ("post", "/repos/{owner}/{repo}/check-runs"),
    ("get", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("get", "/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
    ("post", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"),
    ("get", "/repos/{owner}/{repo}/actions/runs"),
    ("get", "/repos/{owner}/{repo}/actions/runs/{run_id}"),
    ("get", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"),
    ("post", "/repos/{owner}/{repo}/actions/runs/{run_id}/cancel"),
    ("get", "/repos/{owner}/{repo}/actions/jobs/{job_id}/logs"),
    ("get", "/rate_limit"),
    ("get", "/orgs/{org}/teams/{team_slug}/memberships/{username}"),
    ("get", "/user"),
    ("get", "/user/installations"),
    ("get", "/user/installations/{installation_id}/repositories"),
]

# Webhook event -> actions kept (None: every action the description has).
EVENTS = {
    "pull_request": ["opened", "reopened", "synchronize", "ready_for_review", "edited", "closed"],
    "issue_comment": None,
    "check_run": None,
    "check_suite": None,
    "workflow_run": None,
    "installation": None,
    "installation_repositories": None,
    "ping": None,
}

# Prose and documentation keys dropped wherever they are schema/operation keywords.
DROP_KEYS = {"description", "summary", "example", "examples", "externalDocs", "x-github",
             "x-octokit", "tags", "title", "x-github-releases", "x-deprecation-details"}
# Maps whose keys are names chosen by the API (never keywords to drop).
NAME_MAPS = {"properties", "patternProperties", "headers", "responses", "content", "schemas",
             "parameters", "requestBodies", "$defs", "definitions", "mapping", "variables"}


def strip(node, in_names=False):
    """Drop prose recursively; keys of name maps (e.g. a property called "description") stay."""
    if isinstance(node, list):
        return [strip(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if not in_names and key in DROP_KEYS:
            continue
        if in_names:
            out[key] = strip(value)
        elif key in NAME_MAPS and isinstance(value, dict):
            out[key] = strip(value, in_names=True)
        else:
            out[key] = strip(value)
    return out


def refs_in(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs_in(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs_in(item)


def close_components(doc, roots):
    """The components referenced by roots, transitively, as a new components dict."""
    components: dict = {}
    pending = list(refs_in(roots))
    seen = set()
    while pending:
        ref = pending.pop()
        if ref in seen:
            continue
        seen.add(ref)
        assert ref.startswith("#/components/"), ref
        _, _, kind, name = ref.split("/", 3)
        if kind == "examples":
            continue
        value = doc["components"][kind][name]
        components.setdefault(kind, {})[name] = value
        pending.extend(refs_in(value))
    return {kind: dict(sorted(items.items())) for kind, items in sorted(components.items())}


def fix_known_defects(paths):
    """Repair places where the published description contradicts what GitHub really answers.

    Each fix is listed here so a reader sees every deviation from the upstream file.
    """
    # GET /app/installations: `account` is published as allOf [simple-user, enterprise], which no
    # account can satisfy (a user has no `slug`, an enterprise no `login`); the single-installation
    # schema (components/schemas/installation) says anyOf, as GitHub answers.
    account = (paths["/app/installations"]["get"]["responses"]["200"]["content"]
               ["application/json"]["schema"]["items"]["properties"]["account"])
    if "allOf" in account:
        account["anyOf"] = account.pop("allOf")


def subset_rest(doc):
    paths: dict = {}
    for method, template in OPERATIONS:
        item = doc["paths"][template]
        op = strip(item[method])
        op.pop("x-github-breaking-changes", None)
        for response in op.get("responses", {}).values():
            for media in response.get("content", {}).values():
                media.pop("examples", None)
        paths.setdefault(template, {})[method] = op
        if "parameters" in item:
            paths[template]["parameters"] = strip(item["parameters"])
    fix_known_defects(paths)
    components = close_components(doc, paths)
    components = {kind: {name: strip(value) for name, value in items.items()}
                  for kind, items in components.items()}
    return {
        "openapi": doc["openapi"],
        "info": {"title": doc["info"]["title"], "version": doc["info"]["version"],
                 "x-vendored": "subset regenerated by tests/simulator/vendor/regenerate.py"},
        "servers": doc.get("servers", []),
        "paths": paths,
        "components": components,
    }


def wanted_webhooks(doc):
    keep = {}
    for name, item in doc["webhooks"].items():
        for event, actions in EVENTS.items():
            prefix = event.replace("_", "-")
            if name == prefix or (name.startswith(prefix + "-")
                                  and (actions is None
                                       or name[len(prefix) + 1:].replace("-", "_") in actions)):
                # "installation" must not swallow "installation-repositories-*".
                rest = name[len(prefix) + 1:]
                if event == "installation" and rest.startswith("repositories"):
                    continue
                if event == "installation" and rest == "target-renamed":
                    continue
                keep[name] = item
    return keep


def subset_webhooks(doc):
    hooks = {}
    for name, item in wanted_webhooks(doc).items():
        post = item["post"]
        hooks[name] = {"post": {
            "operationId": post["operationId"],
            "requestBody": strip(post["requestBody"]),
        }}
    components = close_components(doc, hooks)
    components = {kind: {name: strip(value) for name, value in items.items()}
                  for kind, items in components.items()}
    return {
        "openapi": doc["openapi"],
        "info": {"title": doc["info"]["title"], "version": doc["info"]["version"],
                 "x-vendored": "subset regenerated by tests/simulator/vendor/regenerate.py"},
        "webhooks": dict(sorted(hooks.items())),
        "components": components,
    }


def app_events(doc):
    """The webhook events an App can be delivered (whether or not it may subscribe to them)."""
    events = set()
    for item in doc["webhooks"].values():
        meta = item["post"].get("x-github") or {}
        if "app" in (meta.get("supported-webhook-types") or []) and meta.get("subcategory"):
            events.add(meta["subcategory"].replace("-", "_"))  # a few subcategories are spelt with hyphens
    return {"x-vendored": "regenerated by tests/simulator/vendor/regenerate.py from @octokit/openapi-webhooks",
            "events": sorted(events)}


def subset_examples(examples):
    """One official example per kept (event, action)."""
    out = []
    for entry in examples:
        event = entry["name"]
        if event not in EVENTS:
            continue
        actions = EVENTS[event]
        chosen: dict = {}
        for example in entry["examples"]:
            action = example.get("action")
            if actions is not None and action not in actions:
                continue
            chosen.setdefault(action, example)
        out.append({"name": event, "actions": sorted(a for a in chosen if a),
                    "examples": [chosen[a] for a in sorted(chosen, key=lambda a: a or "")]})
    return sorted(out, key=lambda e: e["name"])


def subset_graphql(sdl: str) -> str:
    """The kept types of GitHub's GraphQL schema, as SDL without descriptions or directives."""
    from graphql import parse, print_ast
    from graphql.language import ast as gast

    kept = set(GRAPHQL_FIELDS) | set(GRAPHQL_SCALARS)
    builtin = {"String", "Int", "Boolean", "ID", "Float"}

    def named(type_node) -> str:
        while not isinstance(type_node, gast.NamedTypeNode):
            type_node = type_node.type
        return type_node.name.value

    def usable(type_node) -> bool:
        return named(type_node) in kept | builtin

    document = parse(sdl, no_location=True)
    required = {d.name.value: {f.name.value for f in d.fields or ()} for d in document.definitions
                if isinstance(d, gast.InterfaceTypeDefinitionNode) and d.name.value in kept}
    out = []
    for definition in document.definitions:
        name = getattr(getattr(definition, "name", None), "value", None)
        if name not in kept:
            continue
        if isinstance(definition, gast.ScalarTypeDefinitionNode):
            out.append(gast.ScalarTypeDefinitionNode(name=definition.name, directives=()))
            continue
        wanted = GRAPHQL_FIELDS[name]
        fields = []
        for field in definition.fields or ():
            if (wanted is None or field.name.value in wanted) and usable(field.type):
                arguments = tuple(gast.InputValueDefinitionNode(name=a.name, type=a.type, default_value=a.default_value, directives=())
                                  for a in (field.arguments or ()) if usable(a.type))
                fields.append(gast.FieldDefinitionNode(name=field.name, arguments=arguments, type=field.type, directives=()))
        # An interface stays only where every field it requires was kept (Query keeps no `id`).
        names = {f.name.value for f in fields}
        interfaces = tuple(i for i in (definition.interfaces or ()) if i.name.value in kept
                           and required[i.name.value] <= names)
        cls = type(definition)
        out.append(cls(name=definition.name, interfaces=interfaces, fields=tuple(fields), directives=()))
    missing = kept - {d.name.value for d in out}
    if missing:
        raise SystemExit(f"GraphQL types missing from the schema: {sorted(missing)}")
    header = "# Subset of GitHub's public GraphQL schema (@octokit/graphql-schema), regenerated by\n" \
             "# tests/simulator/vendor/regenerate.py: only what the App queries.\n"
    return header + print_ast(gast.DocumentNode(definitions=tuple(out))) + "\n"


def npm_fetch(kind, tmp):
    spec, member = PACKAGES[kind]
    out = subprocess.run(["npm", "pack", spec, "--silent", "--pack-destination", tmp],
                         check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    with tarfile.open(Path(tmp) / out) as tar:
        tar.extract(member, Path(tmp) / kind)
    return Path(tmp) / kind / member


def source(kind, args, index, use_npm, tmp):
    if len(args) > index:
        return Path(args[index])
    return npm_fetch(kind, tmp)


def write(path, data):
    path.write_text(json.dumps(data, indent=None, separators=(",", ":"), sort_keys=False) + "\n")
    print(f"wrote {path.relative_to(REPO_ROOT)} ({path.stat().st_size // 1024} KiB)")


def main():
    use_npm = "--npm" in sys.argv[1:]
    args = [sys.argv[0]] + [a for a in sys.argv[1:] if a != "--npm"]
    with tempfile.TemporaryDirectory() as tmp:
        rest = json.loads(source("rest", args, 1, use_npm, tmp).read_text())
        hooks = json.loads(source("webhooks", args, 2, use_npm, tmp).read_text())
        examples = json.loads(source("examples", args, 3, use_npm, tmp).read_text())
        graphql_sdl = source("graphql", args, 4, use_npm, tmp).read_text()
    missing = [(m, p) for m, p in OPERATIONS if m not in rest["paths"].get(p, {})]
    if missing:
        raise SystemExit(f"operations missing from the description: {missing}")
    write(HERE / "rest-api.json", subset_rest(rest))
    write(HERE / "webhooks.json", subset_webhooks(hooks))
    write(HERE / "app-events.json", app_events(hooks))
    write(HERE / "webhook-examples.json", subset_examples(examples))
    (HERE / "graphql-schema.graphql").write_text(subset_graphql(graphql_sdl))
    print("wrote tests/simulator/vendor/graphql-schema.graphql")


if __name__ == "__main__":
    main()
