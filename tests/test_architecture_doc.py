"""docs/architecture.md is true to the code: every module it names exists, every folder of bot/ and
checks/ and every module in them is named (a rule module by its `regNNN_<name>.py` pattern), every
"`function` in `path`" it states is defined there, and what it says the web imports from the
worker is what the web imports (read with `ast`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text()
BLOCK = DOC.split("## The folders", 1)[1].split("```\n", 2)[1]
PACKAGES = ("bot", "checks")


def _modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts or path.name == "__init__.py":
                continue
            yield path.relative_to(ROOT)


def _entries() -> dict[str, str]:
    """Each folder of the block (bot/web/, checks/target/, ...) -> the text of its entry."""
    entries: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    current = None
    for line in BLOCK.splitlines():
        m = re.match(r"^( *)(?:[\w.]+, )*([a-z_]+/)(?:\s|$)", line)  # `cli.py, commands/` names commands/
        if m:
            indent = len(m.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            current = "".join(name for _, name in stack) + m.group(2)
            stack.append((indent, m.group(2)))
            entries[current] = line[m.end():]
        elif current is not None:
            entries[current] += " " + line
    return entries


def test_every_module_the_doc_names_exists():
    named = set(re.findall(r"\b((?:bot|checks|tests)/[\w/]+\.py)\b", DOC))
    assert named, "the doc names no module"
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert missing == [], missing


def test_every_folder_and_module_is_named():
    entries = _entries()
    folders = {str(p.parent.relative_to(ROOT)) + "/" for p in map(lambda m: ROOT / m, _modules())}
    assert sorted(folders - set(entries) - {"bot/", "checks/"}) == []
    unnamed = []
    for module in _modules():
        folder = str(module.parent) + "/"
        text = entries.get(folder, "") if folder not in ("bot/", "checks/") else BLOCK
        if folder in ("checks/ruleset/", "checks/ruleset/reading/") and re.fullmatch(r"reg\d{3}_\w+", module.stem):
            ok = "regNNN_<name>.py" in text
        else:
            ok = re.search(rf"(?<![\w/]){re.escape(module.stem)}(?![\w])", text) or str(module) in DOC
        if not ok:
            unnamed.append(str(module))
    assert unnamed == [], f"name each in its folder's entry of docs/architecture.md: {unnamed}"


def test_every_handler_is_named_with_what_it_handles():
    handlers = _entries()["bot/worker/handlers/"]
    for path in sorted((ROOT / "bot/worker/handlers").glob("*.py")):
        if path.name != "__init__.py":
            assert re.search(rf"\b{path.stem}\s+\(", handlers) or path.stem == "installations", path.stem


def test_every_function_the_doc_places_is_defined_there():
    stated = re.findall(r"`(\w+)` in\s+`((?:bot|checks)/[\w/]+\.py)`", DOC)
    assert ("complete_run", "bot/worker/handlers/pull_requests.py") in stated
    assert ("reserve", "bot/store/ondemand.py") in stated
    wrong = []
    for name, path in stated:
        tree = ast.parse((ROOT / path).read_text())
        defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        if name not in defined:
            wrong.append(f"{name} is not defined in {path}")
    assert wrong == []


def test_what_the_web_imports_from_the_worker_is_what_the_doc_says():
    imported = set()
    for path in (ROOT / "bot/web").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bot.worker"):
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names if a.name.startswith("bot.worker")}
    paragraph = DOC.split("**What the web imports from the worker.**", 1)[1].split("\n\n", 1)[0]
    said = {p[:-3].replace("/", ".") for p in re.findall(r"`(bot/worker/[\w/]+\.py)`", paragraph)}
    assert said == imported
