# One command each: `make demo`, `make test`, `make bench`. Each sets up what it needs.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test bench lint system-packages clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# The OpenLDAP server and client tools, openssl for test certificates, Chromium for the HTML
# report test, systemd-analyze to verify the unit files, and Samba to run an Active Directory
# domain controller for the AD tests (with its AD database modules, and the provisioning
# files and VFS modules that provisioning a domain needs).
system-packages:
	@missing=""; \
	[ -x /usr/sbin/slapd ] || missing="$$missing slapd"; \
	{ [ -x /usr/sbin/samba ] && ls -d /usr/share/samba/setup /usr/lib/*-linux-gnu/samba/ldb \
	    /usr/lib/*-linux-gnu/samba/vfs/acl_xattr.so >/dev/null 2>&1; } \
	  || missing="$$missing samba samba-ad-provision samba-dsdb-modules samba-vfs-modules"; \
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

clean:
	rm -rf $(VENV) .syncd .pytest_cache .mypy_cache .ruff_cache
