# make run   - install into .venv (embedded models, no download) and open the UI on http://127.0.0.1:7860
# make test  - install with the test tools and run ruff, mypy and the whole pytest suite (about 12 min on 2 cores)
# make test-fast - the unit tier alone (under a minute on 2 cores): the loop to run after each edit
PYTHON ?= python3
VENV ?= .venv
VENV_PY := $(VENV)/bin/python
ARGS ?=
INSTALL_INPUTS := pyproject.toml facefusion_ui/installer.py

.PHONY: install install-test run test test-fast lint clean system-deps

$(VENV)/.installed: $(INSTALL_INPUTS)
	$(PYTHON) -m facefusion_ui.installer --venv $(VENV) --quiet
	touch $@

$(VENV)/.installed-test: $(INSTALL_INPUTS)
	$(PYTHON) -m facefusion_ui.installer --venv $(VENV) --extras test --quiet
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

run: install
	$(VENV_PY) run.py $(ARGS)

lint: install-test
	$(VENV_PY) -m ruff check .
	$(VENV_PY) -m ruff format --check .
	$(VENV_PY) -m mypy

# The UI tests drive Debian's chromium and the scale-out tests start a real redis-server.
system-deps:
	@if command -v redis-server >/dev/null 2>&1 && [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium redis-server; \
	else echo "the tests need chromium (/usr/bin/chromium) and redis-server: sudo apt-get install chromium redis-server"; exit 1; fi

test: system-deps lint
	$(VENV_PY) -m pytest -n 2 --dist loadfile --durations=20

test-fast: install-test
	$(VENV_PY) -m pytest --tier fast -q

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
