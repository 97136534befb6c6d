"""The vendored REST and webhook descriptions: routing, request/response validation, skeletons."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from openapi_schema_validator import (OAS30ReadValidator, OAS30WriteValidator, OAS31Validator,
                                      oas30_format_checker)
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4, DRAFT202012

VENDOR = Path(__file__).resolve().parent / "vendor"
REST_URI = "urn:github:rest"
HOOKS_URI = "urn:github:webhooks"
GREEDY = {"path", "ref", "basehead"}  # parameters that may contain "/"


def _drop_discriminators(node):
    """Two readings of OpenAPI 3.0 the validator needs spelled out.

    - The description puts a "type" discriminator on a oneOf whose first branch is an array
      (content-directory); validators cannot apply it, and oneOf alone already decides.
    - `nullable: true` with an `enum` (check-run `conclusion`) means null is allowed (OpenAPI
      3.0.3 clarification); the validator only accepts null if the enum lists it. The same with a
      `oneOf` (a commit's `author`, null when its email names no account): null is one more branch.
    """
    if isinstance(node, dict):
        node.pop("discriminator", None)
        if node.get("nullable") is True and isinstance(node.get("enum"), list) \
                and None not in node["enum"]:
            node["enum"] = node["enum"] + [None]
        if node.get("nullable") is True and isinstance(node.get("oneOf"), list) \
                and {"enum": [None]} not in node["oneOf"]:
            node["oneOf"] = node["oneOf"] + [{"enum": [None]}]
        for value in node.values():
            _drop_discriminators(value)
    elif isinstance(node, list):
        for value in node:
            _drop_discriminators(value)
    return node


@lru_cache(maxsize=None)
def rest_spec() -> dict:
    return _drop_discriminators(json.loads((VENDOR / "rest-api.json").read_text()))


@lru_cache(maxsize=None)
def webhooks_spec() -> dict:
    return json.loads((VENDOR / "webhooks.json").read_text())


@lru_cache(maxsize=None)
def webhook_examples() -> dict:
    """{event: {action or None: example payload}}"""
    out: dict = {}
    for entry in json.loads((VENDOR / "webhook-examples.json").read_text()):
        for example in entry["examples"]:
            out.setdefault(entry["name"], {})[example.get("action")] = example
    return out


@lru_cache(maxsize=None)
def _rest_registry():
    return Registry().with_resource(REST_URI, Resource.from_contents(
        rest_spec(), default_specification=DRAFT4))


@lru_cache(maxsize=None)
def _hooks_registry():
    return Registry().with_resource(HOOKS_URI, Resource.from_contents(
        webhooks_spec(), default_specification=DRAFT202012))


def _resolve(doc: dict, node):
    while isinstance(node, dict) and "$ref" in node:
        parts = node["$ref"].lstrip("#/").split("/")
        node = doc
        for part in parts:
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _pointer(schema_node_path: list[str]) -> str:
    return REST_URI + "#/" + "/".join(p.replace("~", "~0").replace("/", "~1")
                                      for p in schema_node_path)


def _errors(validator, instance, limit=5) -> list[str]:
    out = []
    for error in validator.iter_errors(instance):
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        message = error.message
        if len(message) > 200:  # the message repeats a large instance: name the constraint instead
            message = f"{error.validator} constraint failed ({error.validator}={error.validator_value!r:.100})"
        out.append(f"{where}: {message}")
        if len(out) >= limit:
            break
    return out


@dataclass
class Param:
    name: str
    location: str
    required: bool
    schema: dict


@dataclass
class Operation:
    method: str
    template: str
    operation_id: str
    regex: re.Pattern
    params: list[Param]
    body_pointer: str | None
    body_required: bool
    responses: dict[str, str | None] = field(default_factory=dict)  # status -> schema pointer

    @property
    def key(self) -> tuple[str, str]:
        return self.method, self.template


def _coerce(value: str, schema: dict):
    kind = schema.get("type")
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        return value
    if kind == "boolean":
        return {"true": True, "false": False}.get(value, value)
    if kind == "array":
        return value.split(",")
    return value


class RestDescription:
    """Operations of the vendored REST description, matched and validated."""

    def __init__(self) -> None:
        doc = rest_spec()
        self.doc = doc
        self.operations: list[Operation] = []
        for template, item in doc["paths"].items():
            shared = item.get("parameters", [])
            for method, op in item.items():
                if method == "parameters":
                    continue
                params = []
                for raw in shared + op.get("parameters", []):
                    p = _resolve(doc, raw)
                    params.append(Param(p["name"], p["in"], p.get("required", False),
                                        _resolve(doc, p.get("schema", {}))))
                body_pointer, body_required = None, False
                if "requestBody" in op:
                    body = _resolve(doc, op["requestBody"])
                    body_required = body.get("required", False)
                    if "application/json" in body.get("content", {}):
                        body_pointer = _pointer(["paths", template, method, "requestBody",
                                                 "content", "application/json", "schema"])
                responses = {}
                for status, response in op["responses"].items():
                    response = _resolve(doc, response)
                    content = response.get("content", {})
                    media = "application/json" if "application/json" in content else next(iter(content), None)
                    if media and "schema" in content[media]:
                        responses[status] = _pointer(["paths", template, method, "responses",
                                                      status, "content", media, "schema"]) \
                            if "$ref" not in op["responses"][status] else \
                            op["responses"][status]["$ref"].replace("#", REST_URI + "#", 1) \
                            + "/content/" + media.replace("/", "~1") + "/schema"
                    else:
                        responses[status] = None
                pattern = "^" + re.sub(
                    r"\{([^}]+)\}",
                    lambda m: f"(?P<{m.group(1)}>{'.+' if m.group(1) in GREEDY else '[^/]+'})",
                    template) + "$"
                self.operations.append(Operation(method.upper(), template, op["operationId"],
                                                 re.compile(pattern), params, body_pointer,
                                                 body_required, responses))
        # literal-heavy templates first, so /commits/{ref}/check-runs wins over /commits/{ref}
        self.operations.sort(key=lambda o: (-len([s for s in o.template.split("/")
                                                  if s and not s.startswith("{")]),
                                            sum(1 for g in GREEDY if "{" + g + "}" in o.template)))

    def match(self, method: str, path: str) -> tuple[Operation | None, dict, bool]:
        """(operation, raw path params, path known for another method)."""
        other = False
        for op in self.operations:
            m = op.regex.match(path)
            if m:
                if op.method == method:
                    return op, m.groupdict(), False
                other = True
        return None, {}, other

    @lru_cache(maxsize=None)
    def _validator(self, pointer: str, write: bool):
        cls = OAS30WriteValidator if write else OAS30ReadValidator
        return cls({"$ref": pointer}, registry=_rest_registry(), format_checker=oas30_format_checker)

    def validate_request(self, op: Operation, path_params: dict, query: dict[str, list[str]],
                         body) -> list[str]:
        problems = []
        known = {p.name for p in op.params if p.location == "query"}
        for name in query:
            if name not in known:
                problems.append(f"query parameter {name!r} is not declared for {op.method} {op.template}")
        for p in op.params:
            if p.location == "path":
                value = path_params.get(p.name)
            elif p.location == "query":
                values = query.get(p.name)
                value = values[-1] if values else None
            else:
                continue
            if value is None:
                if p.required:
                    problems.append(f"missing required {p.location} parameter {p.name!r}")
                continue
            coerced = _coerce(value, p.schema)
            validator = OAS30WriteValidator(p.schema, format_checker=oas30_format_checker)
            for err in _errors(validator, coerced):
                problems.append(f"{p.location} parameter {p.name!r}={value!r}: {err}")
        if body is _NO_BODY:
            if op.body_required:
                problems.append("request body is required")
        elif body is _BAD_JSON:
            problems.append("request body is not valid JSON")
        elif op.body_pointer is None:
            if body not in (None, {}, ""):
                problems.append(f"{op.method} {op.template} takes no JSON body")
        else:
            for err in _errors(self._validator(op.body_pointer, True), body):
                problems.append(f"request body {err}")
        return problems

    def validate_response(self, op: Operation, status: int, body, is_json: bool) -> list[str]:
        key = str(status)
        if key not in op.responses:
            return [f"status {status} is not declared for {op.method} {op.template}"]
        pointer = op.responses[key]
        if pointer is None or not is_json:
            return []
        return [f"response body {err}" for err in _errors(self._validator(pointer, False), body)]

    # -- skeletons ---------------------------------------------------------------------------

    def skeleton(self, name: str) -> dict:
        """A minimal instance of components/schemas/<name>: every required field, typed."""
        return json.loads(_skeleton_cached(name))


NO_BODY = _NO_BODY = object()
BAD_JSON = _BAD_JSON = object()

_DATE = "2026-01-01T00:00:00Z"


def _skel(doc, schema, depth=0):
    schema = _resolve(doc, schema)
    if depth > 12:
        return None
    if "allOf" in schema:
        out: dict = {}
        for part in schema["allOf"]:
            value = _skel(doc, part, depth + 1)
            if isinstance(value, dict):
                out.update(value)
        return out
    for key in ("oneOf", "anyOf"):
        if key in schema:
            options = [o for o in schema[key] if _resolve(doc, o).get("type") != "null"]
            return _skel(doc, options[0], depth + 1) if options else None
    if schema.get("nullable") and schema.get("type") in ("object", None) and depth > 0:
        return None
    if "enum" in schema:
        values = [v for v in schema["enum"] if v is not None]
        return values[0] if values else None
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or (kind is None and "properties" in schema):
        props = schema.get("properties", {})
        return {k: _skel(doc, props.get(k, {}), depth + 1) for k in schema.get("required", [])}
    if kind == "array":
        return []
    if kind == "string":
        fmt = schema.get("format")
        if fmt == "date-time":
            return _DATE
        if fmt == "uri":
            return "https://github.invalid/"
        if fmt == "email":
            return "noreply@github.invalid"
        return ""
    if kind == "integer":
        return max(1, schema.get("minimum", 1))
    if kind == "number":
        return 0
    if kind == "boolean":
        return False
    return None


@lru_cache(maxsize=None)
def _skeleton_cached(name: str) -> str:
    doc = rest_spec()
    return json.dumps(_skel(doc, doc["components"]["schemas"][name]))  # loads() is a fast deep copy


class WebhookDescription:
    def __init__(self) -> None:
        self.doc = webhooks_spec()

    def schema_ref(self, event: str, action: str | None) -> str | None:
        name = event.replace("_", "-") + ("-" + action.replace("_", "-") if action else "")
        item = self.doc["webhooks"].get(name)
        if item is None:
            return None
        return item["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]

    def complete(self, event: str, action: str | None, payload: dict) -> dict:
        """Add the properties the description requires but the (older) official example lacks."""
        ref = self.schema_ref(event, action)
        if ref is not None:
            _complete(self.doc, {"$ref": ref}, payload, self._validator_for_schema)
        return payload

    def _validator_for_schema(self, schema):
        return OAS31Validator(schema, registry=_hooks_registry())

    @lru_cache(maxsize=None)
    def _validator(self, ref: str):
        return OAS31Validator({"$ref": ref.replace("#", HOOKS_URI + "#", 1)},
                              registry=_hooks_registry())

    def validate(self, event: str, action: str | None, payload: dict) -> list[str]:
        ref = self.schema_ref(event, action)
        if ref is None:
            return [f"webhook {event}.{action} is not in the vendored description"]
        return _errors(self._validator(ref), payload, limit=10)


def _allows_null(doc, schema) -> bool:
    schema = _resolve(doc, schema)
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind) or schema.get("nullable"):
        return True
    if "enum" in schema and None in schema["enum"]:
        return True
    return any(_allows_null(doc, o) for o in schema.get("anyOf", []) + schema.get("oneOf", []))


def _complete(doc, schema, value, validator_for, depth=0):
    """Fill missing required properties of value (in place) with typed defaults, recursively."""
    schema = _resolve(doc, schema)
    if depth > 30 or value is None:
        return
    for part in schema.get("allOf", []):
        _complete(doc, part, value, validator_for, depth + 1)
    for key in ("anyOf", "oneOf"):
        options = [_resolve(doc, o) for o in schema.get(key, [])]
        if options:
            if any(validator_for({"$ref": o["$ref"].replace("#", HOOKS_URI + "#", 1)} if "$ref" in o
                                 else o).is_valid(value) for o in schema.get(key, [])):
                return
            if isinstance(value, dict):
                objects = [o for o in options if o.get("type") == "object" or "properties" in o]
                if objects:
                    _complete(doc, objects[0], value, validator_for, depth + 1)
            return
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                value[name] = None if _allows_null(doc, props.get(name, {})) \
                    else _skel(doc, props.get(name, {}), 1)
        for name, sub in props.items():
            if name in value:
                _complete(doc, sub, value[name], validator_for, depth + 1)
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            _complete(doc, schema["items"], item, validator_for, depth + 1)
