"""Serve the live lab (mhabook/views/live.py) from the built site.

Sphinx extension. It exports the bundled model to ONNX (cached in
_build/live/, redone only when the checkpoint changes) and copies the
model, its vocabulary, onnxruntime-web's one WebAssembly build and the two
view templates to _static/live/.
"""

import json
import shutil
import sys
from pathlib import Path

from vendored import CDN_REWRITES

HERE = Path(__file__).resolve().parent


def copy_live_lab(target):
    """The live lab's files, into `target` (_static/live of the site)."""
    sys.path.insert(0, str(HERE.parent))
    import bertviz

    from mhabook.views import live

    target.mkdir(parents=True, exist_ok=True)
    for name, source in live.site_files(live.exported()).items():
        shutil.copyfile(source, target / name)
    # BertViz's template, its CDN addresses pointed away from the CDN (to
    # MHA_BUNDLED, never fetched): live-bertviz.js compiles the template
    # once and points require's paths at _static/bundled itself.
    head_view = (Path(bertviz.__file__).parent / "head_view.js").read_text()
    for url, local in CDN_REWRITES.items():
        head_view = head_view.replace(url, f"MHA_BUNDLED/{local}")
    if "cdnjs" in head_view:
        raise RuntimeError("head_view.js still loads from a CDN")
    (target / "head_view.js").write_text(with_access(head_view))


def with_access(head_view):
    """BertViz's template with the book's head colours, keys, head numbers
    and marks, as mhabook.views.bertviz_view gives the pages' head views.
    live-bertviz.js compiles it once and passes each run's parameters."""
    from mhabook.views import bertviz_view

    colours = json.dumps(bertviz_view.HEAD_COLOURS)
    return (
        bertviz_view.use_our_colours(head_view)
        + f"\n{bertviz_view.ACCESS_JS}\nmhaBertvizAccess(document."
        f"getElementById(PYTHON_PARAMS.root_div_id), {colours}, "
        f"PYTHON_PARAMS.head_numbers);\n"
    )


def copy_live_assets(app, exception):
    if exception or app.builder.format != "html":
        return
    copy_live_lab(Path(app.outdir) / "_static" / "live")


def setup(app):
    app.connect("build-finished", copy_live_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
