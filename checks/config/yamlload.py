"""A YAML loader with YAML 1.2 booleans: only true/false are booleans.

PyYAML follows YAML 1.1, where `off`, `on`, `yes` and `no` are booleans: `REG040: off` would read
as False and a workflow's `on:` key as True. GitHub and our schema mean the words.
"""

from __future__ import annotations

import re
import sys

import yaml

try:  # the C loader is several times faster on large workflow files
    _Base = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Base = yaml.SafeLoader


class NumberTooLong(yaml.constructor.ConstructorError):
    """An integer longer than the interpreter converts (sys.get_int_max_str_digits): a located
    error of the document, where int() would raise a bare ValueError from deep inside the loader."""


class Yaml12Loader(_Base):
    def construct_yaml_int(self, node):
        try:
            return super().construct_yaml_int(node)
        except ValueError as exc:
            if isinstance(exc, yaml.YAMLError):
                raise
            raise NumberTooLong(None, None, f"an integer of {len(str(node.value)):,} characters, longer than "
                                f"{sys.get_int_max_str_digits():,} digits", node.start_mark) from None


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
Yaml12Loader.add_constructor("tag:yaml.org,2002:int", Yaml12Loader.construct_yaml_int)


def load(text: str):
    return yaml.load(text, Loader=Yaml12Loader)


def compose(text: str):
    return yaml.compose(text, Loader=Yaml12Loader)


class TooLarge(Exception):
    """The document has more nodes than allowed once its aliases (and merge keys) are expanded."""

    def __init__(self, nodes: int, limit: int):
        super().__init__(f"more than {limit:,} YAML nodes once aliases are expanded")
        self.nodes = nodes
        self.limit = limit


def expanded_size(root, limit: int) -> int:
    """Nodes of the document as if every alias were written out, computed once per distinct node
    (aliases compose to shared node objects), so a billion-laughs document costs its own size.
    Counting stops (returns limit + 1) as soon as the expansion passes `limit`."""
    size: dict[int, int] = {}
    open_: set[int] = set()  # nodes whose children are being counted: meeting one again is a cycle
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in size:
            continue
        if isinstance(node, yaml.ScalarNode):
            size[key] = 1
            continue
        children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else list(node.value)
        if not children_done:
            if key in open_:
                return limit + 1  # a recursive alias expands without end
            open_.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in size)
            continue
        open_.discard(key)
        total = 1
        for c in children:
            total += size[id(c)]
        size[key] = min(total, limit + 1)
        if total > limit:
            return limit + 1
    return size.get(id(root), 0)


def compose_bounded(text: str, max_nodes: int):
    """The node graph of one document, checked against `max_nodes` before anything is built from it."""
    root = compose(text)
    if root is None:
        return None
    nodes = expanded_size(root, max_nodes)
    if nodes > max_nodes:
        raise TooLarge(nodes, max_nodes)
    return root


def construct(root):
    """Python objects from a composed node graph (the second half of `load`)."""
    if root is None:
        return None
    loader = Yaml12Loader("")
    try:
        return loader.construct_document(root)
    finally:
        loader.dispose()


def load_bounded(text: str, max_nodes: int):
    """`load`, refusing (TooLarge) a document whose alias expansion passes `max_nodes` nodes."""
    return construct(compose_bounded(text, max_nodes))
