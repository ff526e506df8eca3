# One command each: `make demo`, `make test`, `make bench`. Each sets up what it needs.
# Any Python 3.11 or newer: `make test PYTHON=python3.12`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# The versions CI tests: every install here is held to them (`make constraints` renews them).
PIP_INSTALL := pip install --quiet --constraint constraints.txt

.PHONY: demo test bench lint system-packages constraints clean

# Debian's Python makes virtual environments only with python3-venv installed.
$(VENV)/.installed: pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
	  || { echo "syncd needs Python 3.11 or newer: make $(MAKECMDGOALS) PYTHON=python3.X" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV) || { \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv >/dev/null \
	  && $(PYTHON) -m venv --clear $(VENV); }
	$(BIN)/$(PIP_INSTALL) --upgrade pip
	$(BIN)/$(PIP_INSTALL) -e '.[dev]'
	touch $@

# The OpenLDAP server and client tools, openssl for test certificates, Chromium for the HTML
# report test, systemd-analyze to verify the unit files.
system-packages:
	@missing=""; \
	[ -x /usr/sbin/slapd ] || missing="$$missing slapd"; \
	command -v ldapsearch >/dev/null || missing="$$missing ldap-utils"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	command -v systemd-analyze >/dev/null || missing="$$missing systemd"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null \
	  || { $(SUDO) apt-get update -q >/dev/null && \
	       $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null; }; \
	fi

demo: $(VENV)/.installed
	$(BIN)/syncd demo

lint: $(VENV)/.installed
	$(BIN)/ruff check syncd tests benchmarks
	$(BIN)/mypy syncd

test: system-packages lint
	$(BIN)/pytest

bench: system-packages $(VENV)/.installed
	$(BIN)/python benchmarks/run.py

# The newest releases pyproject.toml allows, resolved afresh and written to constraints.txt;
# then `make test` tests them.
constraints:
	@fresh=$$(mktemp -d) && trap 'rm -rf "$$fresh"' EXIT && \
	$(PYTHON) -m venv "$$fresh" && \
	"$$fresh/bin/pip" install --quiet --upgrade pip && \
	"$$fresh/bin/pip" install --quiet --editable '.[dev]' && \
	{ echo "# The versions syncd is tested with: make test installs with them (make constraints)."; \
	  "$$fresh/bin/pip" freeze --all --exclude-editable --exclude setuptools --exclude wheel; \
	} > constraints.txt
	@echo "constraints.txt renewed: run make test"

clean:
	rm -rf $(VENV) .syncd .pytest_cache .mypy_cache .ruff_cache
