#!/usr/bin/env bash
# `make test`: every test in one pytest-xdist run (WORKERS processes, work-stealing).
#
# No test asserts on how fast the machine is: they wait on events with one patience
# (tests/patience.py, CI_REGISTRAR_TEST_PATIENCE) and time things only as ratios or CPU time, so
# they share the cores with each other and with whatever else the machine runs. Every process a
# test starts ends with it (tests/processes.py); the run fails if one is left.
# bench/suite_under_load.py runs this while other processes keep every core busy.
#
# Usage: tests/run.sh WORKERS [pytest arguments...]
set -uo pipefail
cd "$(dirname "$0")/.."
workers=$1
shift

# Bytecode: written under .venv/pycache even where the environment sets PYTHONDONTWRITEBYTECODE.
# Without it every pytest process rewrites the assertions of all test modules and every
# subprocess (services, analysis children, command lines) compiles the package from source.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="$PWD/.venv/pycache"

exec .venv/bin/python -m pytest -n "$workers" --dist worksteal "$@"
