# The two commands of README.md: `make run` starts the App on its embedded defaults,
# `make test` installs what the tests need and runs them. Both work on a fresh machine.
# `make run` installs the App only (`.[app]`); `make test` and `make install` add the test tools
# (`.[app,test]`: pytest, Selenium, the linters the tests run). The command line alone is `pip install .`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
APP := $(VENV)/.installed-app
DEV := $(VENV)/.installed-test

.PHONY: run test install bench docs screenshots

$(APP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[app]'
	touch $@

$(DEV): $(APP)
	$(BIN)/pip install --quiet -e '.[app,test]'
	touch $@

install: $(DEV)

run: $(APP)
	$(BIN)/ci-registrar serve

# Workers: the suite waits on subprocesses and sockets as much as it computes, so two per core.
# Each xdist worker is its own pytest session: its own PostgreSQL database, Redis prefixes, free
# ports and tmp directories (tests/conftest.py). PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) * 2 )))

# Every test, in one pytest-xdist run (tests/run.sh). No test depends on the machine's speed
# (tests/patience.py); bench/suite_under_load.py runs this with every core kept busy.
test: $(DEV)
	bash tests/services.sh
	bash tests/run.sh $(PYTEST_WORKERS) $(PYTEST_ARGS)

bench: install
	$(BIN)/python bench/scan.py

# The generated references: docs/rules.md, docs/configuration.md, docs/ci-registrar.schema.json,
# docs/on-demand-states.md, docs/environment.md (tests/test_docs.py and tests/bot/infra/test_environment.py fail
# when one is stale).
docs: install
	$(BIN)/ci-registrar rule --markdown > docs/rules.md
	$(BIN)/ci-registrar config reference > docs/configuration.md
	$(BIN)/ci-registrar config schema > docs/ci-registrar.schema.json
	$(BIN)/python -m bot.store.ondemand_states > docs/on-demand-states.md
	$(BIN)/python -m bot.infra.environment > docs/environment.md

# README.md's first-run screenshots (docs/images/first-run-*.png), taken again in headless Chromium by
# tests/app/test_first_run_browser.py; every other run of that test only checks README.md against the pages.
screenshots: install
	CI_REGISTRAR_UPDATE_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/app/test_first_run_browser.py
