"""Every notebook that loads a checkpoint runs to the end on another BERT.

Readers on Colab, Binder or with a Hugging Face cache get bert-base-uncased,
not the bundled all-MiniLM-L6-v2. Here each such notebook runs with
$MHA_CHECKPOINT set to a randomly initialised BERT of another shape
(3 layers, 4 heads, width 64, the bundled tokenizer): it must run to the
end, name that model, glue verdicts that its rules give, and find no claim
about trained heads holding in random weights.
"""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from chapter import check_verdicts, glued_texts, toc_notebooks
from tiny import save_random_bert

LOADS = [
    path for path in toc_notebooks() if "load_checkpoint(" in path.read_text()
]
# Verdicts that say a trained head does what the source says: on random
# weights each must give the outcome that finds nothing.
NOT_IN_RANDOM_WEIGHTS = {
    "claim_1": "none",
    "claim_2": False,
    "jobs_done": "none",
}
RUNNER = Path(__file__).parents[1] / "tools" / "run_notebook.py"


def execute(path, out):
    """Run the notebook in a process of its own, as tests/tools/run_notebook.py
    does; returns the executed notebook."""
    run = subprocess.run(
        [sys.executable, RUNNER, path],
        env={**os.environ, "MHA_RUN_OUT": str(out)},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, f"{path.name} stopped:\n{run.stdout[-4000:]}"
    return nbformat.read(out / path.name, as_version=4)


@pytest.fixture(scope="module")
def on_random_bert(tmp_path_factory):
    """{notebook name: executed notebook}, on the random BERT."""
    folder = save_random_bert(tmp_path_factory.mktemp("random-bert"))
    out = tmp_path_factory.mktemp("executed")
    saved = os.environ.get("MHA_CHECKPOINT")
    os.environ["MHA_CHECKPOINT"] = str(folder)
    try:
        with ThreadPoolExecutor(2) as pool:
            runs = pool.map(lambda p: (p.stem, execute(p, out)), LOADS)
            return dict(runs), folder.name
    finally:
        if saved is None:
            del os.environ["MHA_CHECKPOINT"]
        else:
            os.environ["MHA_CHECKPOINT"] = saved


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
