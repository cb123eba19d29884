# Two commands do everything on a fresh machine: `make book` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# CI and these targets install the CPU build of torch pinned in constraints.txt.
PIP_INSTALL := $(BIN)/pip install --disable-pip-version-check -q -c constraints.txt

.PHONY: venv export check book test bench clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) -e ".[book,test,data,bench]"
	touch $@

export: venv
	$(BIN)/python tools/export.py

check: venv
	$(BIN)/python tools/export.py --check

book: export
	$(BIN)/jupyter-book build --warningiserror --keep-going .
	@echo "The book is in _build/html/index.html"

test: check
	$(BIN)/python -m pytest -q -ra

bench: venv
	$(BIN)/python benchmarks/tokenizer.py
	$(BIN)/python benchmarks/attention.py

clean:
	rm -rf _build dist build src/*.egg-info
