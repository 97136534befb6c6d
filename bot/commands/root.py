"""The checkout a command works on, found the same way by every command (`check`, `calibrate`,
`config validate`, `run-plan`).

Upwards from the current directory (or the first PATH argument) to the nearest directory that
has `.git` (as git finds it) or, in a tree exported without `.git` (`git archive`, a release
tarball), the configuration file `.github/ci-registrar.yml` or the default register module. A
command run from a subdirectory therefore reads the same checkout as from its root.
"""

from __future__ import annotations

from pathlib import Path

CONFIG_PATH = ".github/ci-registrar.yml"  # checks.config.schema.CONFIG_PATH, without importing the checks here
REGISTER_MODULE = "tests/ci/ci_register.py"  # checks.config.schema.Paths.register_module's default


def _marks_root(candidate: Path) -> bool:
    return any((candidate / mark).exists() for mark in (".git", CONFIG_PATH, REGISTER_MODULE))


def repository_root(start: Path) -> Path:
    """The checkout holding `start`; `start` (its directory) itself when no directory upwards is one."""
    start = start.resolve()
    here = start if start.is_dir() else start.parent
    for candidate in (here, *here.parents):
        if _marks_root(candidate):
            return candidate
    return here


def checkout(command: str, repo: str | None, start: Path | None = None) -> Path:
    """`--repo` as given, else the checkout found from `start` (default: the current directory);
    exit 2 in one line when it is not a directory."""
    from bot.commands.errors import fail

    root = Path(repo) if repo is not None else repository_root(start or Path.cwd())
    if not root.is_dir():
        fail(command, f"{repo} is not a readable directory")
    return root


def is_target(tree) -> bool:
    """A repository the commands apply to: it has the configuration or the register module."""
    from checks.config.schema import CONFIG_PATH, load_config

    if tree.read(CONFIG_PATH) is not None:
        return True
    config, _ = load_config(None)
    return tree.read(config.paths.register_module) is not None


def not_target(root) -> str:
    return (f"{root} is not a target repository: it has neither {CONFIG_PATH} nor {REGISTER_MODULE} "
            f"(run the command inside the checkout, give --repo DIR, or set paths.register_module in {CONFIG_PATH})")


def uncommitted_mark(root, revision) -> str | None:
    """The file that makes the working tree at `root` a target repository while the commit `revision`
    (a tree) lacks it: the configuration, or the register module it or the defaults name."""
    from checks.scanning.tree import DirectoryTree
    from checks.config.schema import CONFIG_PATH, load_config

    work = DirectoryTree(root)
    if not is_target(work):
        return None
    text = work.read(CONFIG_PATH)
    if text is not None and revision.read(CONFIG_PATH) is None:
        return CONFIG_PATH
    config, _ = load_config(text)
    module = config.paths.register_module
    return module if work.read(module) is not None and revision.read(module) is None else None


def scan_cache_for(root: Path, cache_dir: str | None = None):
    """The scan cache of this checkout (checks/scanning/scan_cache.py), which `check` and
    `calibrate` share: a run loads its own repository's facts, not every repository's this machine
    ever checked (entries stay keyed by content, so a move only re-parses)."""
    import hashlib

    from checks.scanning.scan_cache import DiskScanCache, default_cache_dir

    if cache_dir is None:
        checkout = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
        cache_dir = default_cache_dir() / "checkouts" / checkout
    return DiskScanCache(cache_dir)
