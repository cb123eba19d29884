# Two commands do everything on a fresh machine: `make book` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# pytest-xdist processes for the tests that do not build the book (make test, test-fast, prepare).
TEST_WORKERS ?= 2
# CI and these targets install the CPU build of torch pinned in constraints.txt.
PIP_INSTALL := $(BIN)/pip install --disable-pip-version-check -q -c constraints.txt
BROWSER_PACKAGES := chromium chromium-driver fonts-wqy-microhei
JUPYTER_BOOK := $(BIN)/jupyter-book build --warningiserror --keep-going
# The build and the tests never use the network: the chapters read IMDB from $IMDB_DIR or from
# the datasets cache that `make imdb` fills (online, once), and fall back to a labelled stand-in.
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1

.PHONY: venv lab mathjax browser export check chapter prepare book translations linkcheck test test-book test-fast timings bench clean imdb gpu-check

venv: $(VENV)/.installed

# The library with every extra, and beside it the book's own package (scratchbook/: its records,
# pages and diagrams), which is never part of the library's wheel. JupyterLab with jupytext opens
# a chapter as a notebook (`make lab`); the hook in tools/jupyter/scratchbook.json keeps the
# chapter's own text wherever a save from Jupyter changed nothing (scratchbook.notebook_saves).
# JupyterLab brings rfc3987-syntax (jsonschema's IRI format check, which nothing here uses); it
# compiles 38 grammars whenever nbformat is imported, 1.4 s in every process that reads a chapter
# (`tools/export.py` took 2.0 s to print its help, 0.6 s without it), so it is removed again.
$(VENV)/.installed: pyproject.toml scratchbook/pyproject.toml constraints.txt tools/jupyter/scratchbook.json
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) -e ".[book,test,data,bench]" -e ./scratchbook
	$(BIN)/pip uninstall --disable-pip-version-check -q -y rfc3987-syntax
	install -D -m 644 tools/jupyter/scratchbook.json $(VENV)/etc/jupyter/jupyter_server_config.json
	touch $@

# A chapter as a notebook: JupyterLab, where a chapter (book/NN_topic.md) opens with
# "Open With > Jupytext Notebook" and saves straight back to the .md.
lab: venv
	$(BIN)/jupyter lab book/

# MathJax, served by the book itself (version pinned in package.json).
mathjax: node_modules/mathjax/package.json

node_modules/mathjax/package.json: package.json
	npm install --no-audit --no-fund --no-package-lock
	touch $@

# Headless Chromium, its driver and a CJK font (the book's Chinese examples) for
# tests/browser/test_browser.py, from Debian's packages. Best
# effort: without root or a package source the browser test skips and says why. .ci/run
# installs them unconditionally.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then \
		echo "chromium: $$(command -v chromium), chromedriver: $$(command -v chromedriver)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(BROWSER_PACKAGES)) \
			|| echo "could not install chromium; tests/browser/test_browser.py will skip"; \
	else \
		echo "chromium not installed (needs root and apt-get); tests/browser/test_browser.py will skip"; \
	fi

# The one step that goes online: IMDB from the HuggingFace hub into the datasets cache, where
# the chapters (and `scratchformer train-imdb` without --data) find it offline afterwards.
imdb: venv
	HF_HUB_OFFLINE=0 HF_DATASETS_OFFLINE=0 $(BIN)/python -c "import datasets; datasets.load_dataset('imdb')"

# EXPORT_FLAGS=--update carries hand edits of src/ back into the chapters (and a notebook paired
# with one); --force discards them.
export: venv
	$(BIN)/python tools/export.py $(EXPORT_FLAGS)

# One pass that lists every problem, then fails: a translated page whose English changed since
# its catalogue (each message named; `make translations` then lists them whole) and a catalogue
# that breaks the Chinese edition's typography or glossary (locales/zh_CN/GLOSSARY.md), with each
# translated page's coverage; src/ out of date, notebooks out of step with their chapters, stray
# pages in book/, a leftover notebook pairing, every convention of the book (tools/book/conventions.py:
# code width, alt text, map, summary, exercises, ...), a generated module that does not import,
# undefined names in the chapters' cells, src/, tests/, benchmarks/, scratchbook/ and tools/
# (pyflakes). Seconds; the first run in a fresh clone reads the translated pages once (Sphinx's
# gettext extraction, about 15 s of CPU), later runs only the pages that changed. The two
# halves run side by side (the exporter's report is printed after the translations').
# `.venv/bin/python tools/export.py --where src/scratchformer/<module>.py:<line>` names the
# chapter line a generated line comes from.
check: venv
	@status=0; report=$$(mktemp); \
	$(BIN)/python tools/export.py --check >"$$report" 2>&1 & export_check=$$!; \
	$(BIN)/python tools/translations.py check || status=1; \
	wait $$export_check || status=1; cat "$$report"; rm -f "$$report"; exit $$status

# One chapter's code cells, run against the current package without building the book:
# `make chapter N=4` names the chapter line of a failing cell. Seconds for chapters 2-9.
chapter: venv
	@test -n "$(N)" || { echo "usage: make chapter N=<chapter number>, e.g. make chapter N=4"; exit 2; }
	$(BIN)/python tools/export.py --run-chapter $(N)

# Before a commit: export, check, the fast tests and every chapter changed since git's HEAD, each
# step run even when an earlier one failed; the end lists every failure.
prepare: venv
	TEST_WORKERS=$(TEST_WORKERS) $(BIN)/python tools/export.py --prepare

# A warm build re-executes the chapters whose cells changed; a change under src/scratchformer/
# (any exported cell), book/results/ or the IMDB data re-executes all of them (3½-6½ minutes).
# A failing chapter does not stop the build: every one is listed, then the build fails.
# The chapters to run are run BOOK_JOBS at a time (default 2) before Sphinx reads them
# (tools/book/parallel.py); BOOK_JOBS=1 runs them one by one as each page is read.
# Then the Chinese edition, into _build/html/zh/: the same pages with the translations in
# locales/zh_CN/, their outputs from the cache the English build filled (nothing runs twice).
book: export mathjax
	$(JUPYTER_BOOK) .
	$(BIN)/python tools/translations.py build
	@echo "The book is in _build/html/index.html, the Chinese edition in _build/html/zh/index.html"

# After an English edit: the catalogues of the translated pages in step with it (only those whose
# messages changed are written, and only their changed entries, a changed one marked fuzzy with
# its old English as `#| msgid`), and every message that needs translating, whole (a changed one as
# a word diff). The pages are read, not run: seconds, not minutes. START=book/10_bert starts a page.
translations: venv
	$(BIN)/python tools/translations.py update $(if $(START),--start $(START))

# The book's own links (pages, anchors, files); external URLs are never fetched.
linkcheck: export mathjax
	$(JUPYTER_BOOK) --builder custom --custom-builder linkcheck .
	@echo "Report: _build/linkcheck/output.txt"

# Side by side: one pytest process builds the book and runs the tests that read it (its report
# is printed when both have finished), while TEST_WORKERS processes (pytest-xdist) share the
# rest, niced: a cold build, which runs its chapters BOOK_JOBS at a time, is the longest path
# of the pass, so they yield to it and use what it leaves. The tests that read the book open its
# pages and run its boxes in Chromium too (tests/browser/). Then, alone on the machine, the few
# that time how a page responds (marked `quiet`: no long task while the GPT writes or a long
# review is typed), on the book the first pass built (BOOK_BUILT=1: not built again, 10-15 s
# of a build with nothing to run). Every pass runs; `make test` fails if any did. Each lists its
# slowest tests.
BOOK_TESTS := $(BIN)/python -m pytest -q -rfE -p no:cacheprovider --durations=10 -m

test: check mathjax browser
	@status=0; book_log=$$(mktemp); \
	echo "make test: the book is built and its tests run beside the other tests"; \
	$(BOOK_TESTS) "book and not quiet and not timing" >"$$book_log" 2>&1 & book=$$!; \
	nice -n 10 $(BIN)/python -m pytest -q -rfE -m "not book and not timing and not check" -n $(TEST_WORKERS) \
		--durations=10 || status=1; \
	wait $$book || status=1; \
	echo "make test: the book and the tests that read it"; cat "$$book_log"; rm -f "$$book_log"; \
	echo "make test: the tests that time the pages, alone on the machine"; \
	BOOK_BUILT=1 $(BIN)/python -m pytest -q -rfE -m "quiet and not timing" --durations=5 tests/browser || status=1; \
	exit $$status

# The book's half of make test: the build and the tests that read it (pages, boxes, both
# editions); not the tests that build small books of their own (marked own_build), nor the
# three that time the boxes (marked quiet: they run the models in _static/models/, the same
# whatever data the book was built on; make test runs them). What a build on other data needs
# checked: CI's newcomer pass runs it on the stand-in, where the other tests would repeat what
# the real-data make test runs; it sets SKIP_SERVED=1 to leave out, too, the tests of what the
# boxes' models compute (marked served_model), which read the same models on any build.
test-book: check mathjax browser
	$(BOOK_TESTS) "book and not own_build and not quiet and not timing$(if $(SKIP_SERVED), and not served_model)"

# On a quiet machine of the recorded kind: do the speed-ups the book quotes still hold here? A
# timing depends on the processor and on what else runs, so `make test` (and CI) leaves it out.
timings: venv
	$(BIN)/python -m pytest -q -ra -m timing

# The quick loop: everything but the book builds, the browser test and the tests marked slow
# (an exhaustive Unicode scan, interrupted training runs, a wheel in a fresh venv, notebook round
# trips), which `make test` runs; in TEST_WORKERS processes (pytest-xdist). About 5 minutes of
# CPU, so about 2½ minutes on two idle cores (see README, "Timings"); it prints its wall time.
test-fast: check
	@start=$$(date +%s); \
	$(BIN)/python -m pytest -q -rfE -m "not book and not slow and not timing and not check" -n $(TEST_WORKERS); status=$$?; \
	echo "make test-fast: the tests took $$(( $$(date +%s) - start )) s of wall time"; exit $$status

bench: venv
	$(BIN)/python benchmarks/tokenizer.py
	$(BIN)/python benchmarks/attention.py
	$(BIN)/python benchmarks/bert_cpu.py
	$(BIN)/python benchmarks/gpt_kv_cache.py
	$(BIN)/python benchmarks/cpu_memory.py --steps 200
	$(BIN)/python benchmarks/pretraining.py --steps 10

# On a machine with an NVIDIA GPU: CUDA tests, bf16 attention benchmark, gpu preset on a slice of
# IMDB ($IMDB_DIR), results under $OUT (default _build/gpu-check). Skips cleanly without CUDA.
gpu-check: venv
	PYTHON=$(BIN)/python bash tools/gpu_check.sh

clean:
	rm -rf _build dist build src/*.egg-info
