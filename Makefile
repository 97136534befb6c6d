# The two commands of README.md: `make run` starts the App on its embedded defaults,
# `make test` installs what the tests need and runs them. Both work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test install bench

$(BIN)/ci-registrar: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

install: $(BIN)/ci-registrar

run: install
	$(BIN)/ci-registrar serve

test: install
	bash tests/services.sh
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: install
	$(BIN)/python bench/scan.py
