"""A YAML loader with YAML 1.2 booleans: only true/false are booleans.

PyYAML follows YAML 1.1, where `off`, `on`, `yes` and `no` are booleans: `REG040: off` would read
as False and a workflow's `on:` key as True. GitHub and our schema mean the words.
"""

from __future__ import annotations

import re

import yaml

try:  # the C loader is several times faster on large workflow files
    _Base = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Base = yaml.SafeLoader


class Yaml12Loader(_Base):
    pass


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load(text: str):
    return yaml.load(text, Loader=Yaml12Loader)


def compose(text: str):
    return yaml.compose(text, Loader=Yaml12Loader)
