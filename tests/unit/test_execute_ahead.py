"""The build hook that executes notebooks side by side
(book/_ext/execute_ahead.py): what it caches, myst-nb must find, and a
notebook that fails must be left for myst-nb to run and report. Tiny
notebooks in a temporary folder; the suite's book build uses the hook on
the chapter itself."""

import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
import yaml
from jupyter_cache import get_cache
from myst_nb.core.config import NbParserConfig

from chapter import BOOK, ROOT, toc_notebooks

sys.path.insert(0, str(BOOK / "_ext"))
import execute_ahead  # noqa: E402


def notebook(folder, name, *sources):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def run_hook(folder, cache_path, names, inputs=(), **settings):
    """Run the hook as Sphinx would; return the docnames Sphinx reads."""
    config = NbParserConfig(
        execution_mode="cache",
        execution_cache_path=str(cache_path),
        execution_timeout=120,
        **settings,
    )
    env = SimpleNamespace(
        mystnb_config=config,
        doc2path=lambda name: folder / f"{name}.ipynb",
        found_docs={p.stem for p in folder.glob("*.ipynb")},
    )
    app = SimpleNamespace(
        srcdir=str(folder),
        config=SimpleNamespace(
            execute_ahead_first=[], execute_ahead_inputs=list(inputs)
        ),
    )
    names = list(names)
    execute_ahead.execute_ahead(app, env, names)
    return names


def cached(cache_path, path):
    """The executed notebook myst-nb would take from the cache, or None."""
    cache = get_cache(str(cache_path))
    try:
        cache.match_cache_notebook(nbformat.read(path, as_version=4))
    except KeyError:
        return None
    _, nb = cache.merge_match_into_notebook(nbformat.read(path, as_version=4))
    return nb


def test_executed_notebooks_are_found_by_myst_nb_and_failures_are_not(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(execute_ahead.os, "cpu_count", lambda: 2)
    good = notebook(tmp_path, "good", "import os", "print(6 * 7)")
    threads = notebook(
        tmp_path,
        "threads",
        "import os",
        "print(os.environ['OMP_NUM_THREADS'])",
    )
    bad = notebook(tmp_path, "bad", "raise ValueError('no')")
    cache_path = tmp_path / "cache"
    run_hook(tmp_path, cache_path, ["good", "threads", "bad"])
    nb = cached(cache_path, good)
    assert nb is not None
    assert nb.cells[1].outputs[0].text == "42\n"
    # Three notebooks on two cores: two at a time, one thread each.
    assert cached(cache_path, threads).cells[1].outputs[0].text == "1\n"
    assert cached(cache_path, bad) is None  # myst-nb runs it and reports


def test_nothing_runs_outside_cache_mode_or_when_excluded(tmp_path):
    path = notebook(tmp_path, "one", "print(1)")
    other = notebook(tmp_path, "two", "print(2)")
    cache_path = tmp_path / "cache"
    run_hook(tmp_path, cache_path, ["one", "two"], execution_in_temp=True)
    run_hook(
        tmp_path,
        cache_path,
        ["one", "two"],
        execution_excludepatterns=("*one.ipynb", "*two.ipynb"),
    )
    assert cached(cache_path, path) is None
    assert cached(cache_path, other) is None


def test_the_named_notebooks_start_first_in_their_order():
    names = ["a", "b", "c", "d"]
    assert execute_ahead.in_order(names, ["c", "a"]) == ["c", "a", "b", "d"]
    assert execute_ahead.in_order(names, []) == names


def test_the_notebooks_named_to_start_first_are_the_books():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    first = config["sphinx"]["config"]["execute_ahead_first"]
    notebooks = [
        p.relative_to(ROOT).with_suffix("").as_posix() for p in toc_notebooks()
    ]
    assert sorted(first) == sorted(notebooks), (
        "execute_ahead_first in _config.yml lists the notebooks of _toc.yml"
    )


# An input folder, the file the notebooks read from it, that file before
# and after a change, the cells that read it, and what they print.
CHANGES = {
    "code": (
        "lib",
        "answer.py",
        ("VALUE = 1\n", "VALUE = 5\n"),
        ("import sys; sys.path.insert(0, 'lib')", "import answer"),
        "print(answer.VALUE)",
        ("1\n", "5\n"),
    ),
    "data": (
        "data",
        "pairs.tsv",
        ("a\tb\n", "c\td\n"),
        (),
        "print(open('data/pairs.tsv').read(1))",
        ("a\n", "c\n"),
    ),
}


@pytest.mark.parametrize("kind", CHANGES)
def test_a_change_to_an_input_runs_every_notebook_again(
    tmp_path, monkeypatch, kind
):
    monkeypatch.setattr(execute_ahead.os, "cpu_count", lambda: 2)
    folder, name, (before, after), setup, reads, prints = CHANGES[kind]
    (tmp_path / folder).mkdir()
    path = tmp_path / folder / name
    path.write_text(before)
    one = notebook(tmp_path, "one", *setup, reads)
    notebook(tmp_path, "two", *setup, "print(2)")
    cache_path = tmp_path / "cache"
    run_hook(tmp_path, cache_path, ["one", "two"], inputs=[folder])
    assert cached(cache_path, one).cells[-1].outputs[0].text == prints[0]
    # Unchanged: Sphinx reads nothing and the cache keeps what it has.
    assert run_hook(tmp_path, cache_path, [], inputs=[folder]) == []
    assert cached(cache_path, one) is not None
    path.write_text(after)
    read = run_hook(tmp_path, cache_path, [], inputs=[folder])
    assert read == ["one", "two"]
    assert cached(cache_path, one).cells[-1].outputs[0].text == prints[1]


def test_a_kernel_that_dies_at_start_is_started_once_more(
    tmp_path, monkeypatch
):
    import jupyter_cache.executors.utils as utils

    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # execute sets it
    died = RuntimeError("Kernel died before replying to kernel_info")
    calls = []

    def once_dead(notebook, **kwargs):  # a port taken at its first start
        calls.append(kwargs["cwd"])
        if len(calls) == 1:
            raise died
        return SimpleNamespace(err=None, time=0.5)

    monkeypatch.setattr(utils, "single_nb_execution", once_dead)
    path = notebook(tmp_path, "one", "print(1)")
    _, seconds, error = execute_ahead.execute(path, 60, 1)
    assert (len(calls), seconds, error) == (2, 0.5, None)

    def always_dead(notebook, **kwargs):
        calls.append(kwargs["cwd"])
        raise died

    monkeypatch.setattr(utils, "single_nb_execution", always_dead)
    with pytest.raises(RuntimeError, match="Kernel died"):
        execute_ahead.execute(path, 60, 1)
    assert len(calls) == 4  # two tries, then the error


@pytest.mark.parametrize("room", ["short", "long"])
def test_a_kernel_listens_on_sockets_of_its_own_and_leaves_none(
    tmp_path, monkeypatch, room
):
    """A TCP kernel can be reached by another kernel's client through a
    port both were given (its heartbeat pings then print "Uncaught
    exception in ZMQStream callback" into a cell): the build's kernels
    listen on Unix sockets named after their own connection files, or on
    TCP where such a path would be over Linux's 107 bytes."""
    with tempfile.TemporaryDirectory(prefix="rt") as short:
        runtime = Path(short) if room == "short" else tmp_path / ("r" * 60)
        assert (len(str(runtime)) + 50 <= 107) == (room == "short")
        monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
        monkeypatch.setenv("OMP_NUM_THREADS", "1")  # execute sets it
        path = notebook(
            tmp_path,
            "one",
            "from ipykernel import get_connection_info\n"
            "import json\n"
            "info = json.loads(get_connection_info())\n"
            "print(info['transport'], info['ip'])",
        )
        executed, _, error = execute_ahead.execute(path, 60, 1)
        assert error is None
        transport, ip = executed.cells[0].outputs[0].text.split()
        if room == "short":
            assert transport == "ipc"
            assert ip.startswith(str(runtime / "kernel-"))
        else:
            assert transport == "tcp"
        assert list(runtime.iterdir()) == []  # sockets and file removed
