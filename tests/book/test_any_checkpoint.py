"""Every notebook that loads a checkpoint runs to the end on another BERT.

Readers on Colab, Binder or with a Hugging Face cache get bert-base-uncased,
not the bundled all-MiniLM-L6-v2. Here each such notebook runs with
$MHA_CHECKPOINT set to a randomly initialised BERT of another shape
(3 layers, 4 heads, width 64, the bundled tokenizer): it must run to the
end, name that model, glue verdicts that its rules give, and find no claim
about trained heads holding in random weights.

The notebooks run one after the other in one kernel, as the build runs
them (in book/, on one thread), every cell in order; `%reset -f` clears
the names between them. The kernel imports PyTorch, transformers and
matplotlib once, not once per notebook: each notebook still runs its own
imports cell and seeds there. (Each runs in a fresh kernel of its own in
the book build.)

sharing_kv times decoding steps of random layers of its own, whatever
the checkpoint: here, where that timing tells nothing new, it runs 3
repeats of 2 ms blocks (sharing_results' `timing`), not 15 of 20 ms,
and the page still plots, tabulates and decides from what it measured.
"""

import os
import sys

import nbclient
import nbformat
import pytest
from jupyter_client import KernelManager

from chapter import (
    BOOK,
    ROOT,
    check_verdicts,
    glued_texts,
    socket_kernels,
    toc_notebooks,
)
from tiny import save_random_bert

sys.path.insert(0, str(ROOT / "tests" / "tools"))
from edit_notebook import edit  # noqa: E402

LOADS = [
    path for path in toc_notebooks() if "load_checkpoint(" in path.read_text()
]
# Verdicts that say a trained head does what the source says: on random
# weights each must give the outcome that finds nothing.
NOT_IN_RANDOM_WEIGHTS = {
    "c1_answer": "none",
    "pattern_halves": "none",
    "jobs_done": "none",
}
# {notebook: (a string the cell holds, old, new)}: see the docstring
QUICKER = {
    "sharing_kv": (
        "sharing.sharing_results(",
        "sentences)",
        'sentences, timing={"repeats": 3, "min_run_time": 0.002})',
    ),
}


def run_in_turn(paths, checkpoint):
    """{name: executed notebook}: each notebook of `paths` run to its end
    in one kernel with $MHA_CHECKPOINT set to `checkpoint`."""
    env = {
        **os.environ,
        "MHA_CHECKPOINT": str(checkpoint),
        "OMP_NUM_THREADS": "1",  # as the build's kernels
    }
    manager = socket_kernels(KernelManager)(kernel_name="python3")
    manager.start_kernel(cwd=str(BOOK), env=env)
    kernel = manager.client()
    kernel.start_channels()
    executed = {}
    try:
        kernel.wait_for_ready(timeout=120)
        for path in paths:
            kernel.execute_interactive("%reset -f", timeout=60)
            nb = nbformat.read(path, as_version=4)
            if path.stem in QUICKER:
                edit(nb, *QUICKER[path.stem])
            client = nbclient.NotebookClient(
                nb,
                km=manager,
                timeout=600,
                resources={"metadata": {"path": str(path.parent)}},
            )
            client.kc = kernel
            try:
                client.execute()
            except nbclient.exceptions.CellExecutionError as error:
                pytest.fail(f"{path.name} stopped:\n{str(error)[-4000:]}")
            executed[path.stem] = nb
    finally:
        kernel.stop_channels()
        manager.shutdown_kernel(now=True)
    return executed


@pytest.fixture(scope="module")
def on_random_bert(tmp_path_factory):
    """{notebook name: executed notebook}, on the random BERT."""
    folder = save_random_bert(tmp_path_factory.mktemp("random-bert"))
    return run_in_turn(LOADS, folder), folder.name


def test_the_notebooks_that_load_a_checkpoint_are_found():
    names = {p.stem for p in LOADS}
    assert {"one_head", "real_heads", "heads_needed"} <= names


@pytest.mark.parametrize("notebook", [p.stem for p in LOADS])
def test_runs_to_the_end_and_names_the_model(notebook, on_random_bert):
    notebooks, model_name = on_random_bert
    texts = glued_texts(notebooks[notebook])
    assert any(model_name in (t or "") for t in texts.values()), (
        f"{notebook} glues no text naming {model_name}"
    )
    check_verdicts(texts)


def test_no_claim_about_trained_heads_holds_in_random_weights(on_random_bert):
    notebooks, _ = on_random_bert
    seen = set()
    for nb in notebooks.values():
        texts = glued_texts(nb)
        records = check_verdicts(texts)
        for name in NOT_IN_RANDOM_WEIGHTS.keys() & records.keys():
            expected = NOT_IN_RANDOM_WEIGHTS[name]
            assert records[name]["outcome"] == expected, (name, texts[name])
            seen.add(name)
    assert seen == NOT_IN_RANDOM_WEIGHTS.keys()
