"""How much disk the base install (`pip install ci-registrar`: the command line and the pre-commit
hook) takes, against a bare virtualenv, and how much each extra adds on top.

Usage: python bench/install_size.py [--extras store,app]

Builds the project's wheel, makes a bare venv and one venv per install (pip resolves the
dependencies from the package index, as a user's pip does), and prints the size each adds to the
bare venv. Ends with one JSON line of the figures. The target for the base install is 30 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MB = 30


def tree_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin" / "pip"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extras", default="store,app", help="comma-separated extras to measure on top of the base")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(tmp / "w"),
                        str(ROOT)], check=True)
        [wheel] = (tmp / "w").glob("ci_registrar-*.whl")
        venv(tmp / "bare")
        bare = tree_bytes(tmp / "bare")
        sizes = {}
        for extra in ["", *[e for e in args.extras.split(",") if e]]:
            pip = venv(tmp / (extra or "base"))
            spec = f"{wheel}[{extra}]" if extra else str(wheel)
            subprocess.run([str(pip), "install", "--quiet", "--disable-pip-version-check", spec], check=True)
            sizes[extra or "base"] = (tree_bytes(tmp / (extra or "base")) - bare) / 1e6
    print(f"bare venv: {bare / 1e6:.1f} MB")
    for name, mb in sizes.items():
        print(f"{name:>6}: +{mb:.1f} MB over the bare venv" + (f" (target <= {TARGET_MB} MB)" if name == "base" else ""))
    print(json.dumps({"bench": "install_size", "bare_venv_mb": round(bare / 1e6, 1),
                      **{f"{k}_mb": round(v, 1) for k, v in sizes.items()}, "target_base_mb": TARGET_MB}))


if __name__ == "__main__":
    main()
