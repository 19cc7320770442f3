"""The live lab's speed: the bundled model in headless Chromium against
Python's onnxruntime and PyTorch, on this machine.

Run with `make bench-live` after `make book` (it serves _build/html on
127.0.0.1, as `python -m http.server` would). It prints:

- the labs page's weight before the button (bytes fetched, and the bytes
  of the lab's own markup and scripts);
- model download + initialisation time in the browser (fresh context,
  empty cache, each round);
- per-run latency of the model at T = 13, 64, 128 and 512 tokens in the
  browser (onnxruntime-web, one WebAssembly thread), in Python's
  onnxruntime (one thread) and in PyTorch eager (one thread), as medians
  with [min, max] over the rounds, and the ratios of the medians;
- one matrix product, (T, 384) x (384, 1536) as in the model's
  feed-forward layer, in the browser and in Python's onnxruntime, for
  comparison with the model's ratio;
- the page's work after an edit at T = 13 and 32, from the end of the
  lab's 250 ms typing pause (target: 250 ms at 32): tokenize, run, update
  the explorer and the table, paint; and the same with BertViz's head
  view on screen, until it has drawn the run (it draws 12 x T x T SVG
  lines; these rounds alternate between T and T + 1 tokens, so that each
  draws anew);
- the longest main-thread task (the Long Tasks API) at 32, 128 and 512
  tokens, for an edit typed into the lab and for `mhaLive.run()`, its
  result handed back and every attention weight and value norm read in
  the page, and the lab's wait from the edit to the last view drawn;
- a mask change (a head switched off or on in Lab 3's grid, sentences A
  and B of T tokens together) at T = 32 and 128: the wait until the last
  view is drawn, the longest main-thread task, and the wait until the
  similarity is shown (A and B alone run after the pair, as the views
  draw);
- the ONNX file with the head mask and its outputs, against the export
  that returns the attention weights alone (the lab's before Lab 3), and
  against that export trimmed as the lab's is now.

Targets (2-core machine): re-run <= 250 ms for up to 32 tokens; a mask
change drawn in <= 250 ms at 32 tokens; no main-thread task over 200 ms
at 128 tokens (typing, run(), a mask change); browser /
onnxruntime-python <= 3x; lab markup <= 200 KB; the ONNX file with the
head mask <= 5% bigger than without.
"""

import base64
import functools
import http.server
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import recorded  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book"))

from mhabook.experiments import ablation  # noqa: E402
from mhabook.experiments.checkpoint import bundled_path  # noqa: E402
from mhabook.views import live  # noqa: E402

SITE = ROOT / "_build" / "html"
LENGTHS = [13, 64, 128, 512]
ROUNDS = {13: 15, 64: 10, 128: 10, 512: 5}
INIT_ROUNDS = 3
WORDS = ["the", "cat", "sat", "on", "mat", "and", "it", "was", "tired"]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu"]


def text_of(length):
    """A sentence of one-token words: [CLS] + words + [SEP] = length."""
    return " ".join(WORDS[i % len(WORDS)] for i in range(length - 2))


def matmul_model(rows):
    """One ONNX MatMul, (rows, 384) x (384, 1536): the feed-forward
    layer's product; returns the model's bytes and an input."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    generator = np.random.default_rng(0)
    weight = generator.standard_normal((384, 1536), dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 384])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8
    )
    x = generator.standard_normal((rows, 384), dtype=np.float32)
    return model.SerializeToString(), x


# One MatMul in the page, with the runtime the lab has loaded.
MATMUL = """async ([bytes, x, rows, rounds]) => {
  const params = JSON.parse(
    document.querySelector('.mha-live').dataset.params);
  const root = new URL(document.documentElement.dataset.content_root,
    location.href).href;
  const ort = await import(root + params.folder + '/' + params.runtime);
  const session = await ort.InferenceSession.create(
    Uint8Array.from(atob(bytes), (c) => c.charCodeAt(0)));
  const feeds = {x: new ort.Tensor('float32', Float32Array.from(x),
    [rows, 384])};
  await session.run(feeds);
  const ms = [];
  for (let i = 0; i < rounds; i++) {
    const s = performance.now();
    await session.run(feeds);
    ms.push(performance.now() - s);
  }
  await session.release();
  return ms;
}"""


def summary(samples):
    median = statistics.median(samples)
    return median, f"{median:7.1f} [{min(samples):.1f}, {max(samples):.1f}]"


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve():
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=SITE)
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


# After an edit: run the model, update the explorer and the table, paint.
RERUN = """async (t) => {
  const s = performance.now();
  await mhaLive.run(t, '');
  await new Promise(r => requestAnimationFrame(() => setTimeout(r)));
  return performance.now() - s;
}"""
# The same with BertViz on screen: until its view holds the run's tokens,
# drawn and painted.
BERTVIZ = """async (t) => {
  const s = performance.now();
  const {tokens} = await mhaLive.run(t, '');
  const drawn = () => {
    const texts = document.querySelectorAll('.mha-live-bertviz #left text');
    return texts.length === tokens.length;
  };
  while (!drawn()) {
    await new Promise(r => setTimeout(r, 2));
  }
  await new Promise(r => requestAnimationFrame(() => setTimeout(r)));
  return performance.now() - s;
}"""


# Every main-thread task over 50 ms, from here on (the Long Tasks API).
LONG_TASKS = """() => { window.mhaLong = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.mhaLong.push(e.duration);
  }).observe({type: 'longtask'}); }"""
LONGEST = "() => Math.max(0, ...window.mhaLong)"
EDITS = 3  # edits timed at each length
MASK_CHANGES = 6  # mask changes timed at each length
HEAD = "Layer 2, head 5"  # the grid's button the mask changes press


def pair_of(length):
    """Sentences A and B of one-token words: [CLS] A [SEP] B [SEP] =
    length tokens."""
    words = length - 3
    return text_of(words - words // 2 + 2), text_of(words // 2 + 2)


def typed_edits(page, figures, lengths):
    """Edits typed into sentence A, every view on screen: the longest
    main-thread task after each edit, and the lab's wait from the edit to
    the last view drawn."""
    box = page.get_by_label("Sentence A")
    page.get_by_label("Sentence B (optional)").fill("")
    for length in lengths:
        longest, waited = [], []
        for i in range(EDITS):
            n = length - i % 2  # each edit changes the text
            page.evaluate("() => { window.mhaLong = []; }")
            box.fill(text_of(n))
            page.wait_for_function(
                "(n) => document.querySelector('.mha-live-status')"
                ".textContent.includes(' on ' + n + ' tokens: ')",
                arg=n,
                timeout=120_000,
            )
            page.wait_for_timeout(300)
            longest.append(page.evaluate(LONGEST))
            waited.append(page.evaluate("() => mhaLive.waited"))
        figures["longest"][length] = longest
        figures["waited"][length] = waited


# mhaLive.run(), its result handed back and every weight read in the page:
# each row of attention sums to 1.
RUN_AND_READ = """(t) => mhaLive.run(t, '').then((r) => {
  let rows = 0;
  for (const layer of r.attention) for (const head of layer)
    for (const row of head) for (const w of row) rows += w;
  let norms = 0;
  for (const layer of r.valueNorms) for (const head of layer)
    for (const v of head) norms += v;
  const heads = r.attention.length * r.attention[0].length;
  return {result: r, rows: rows, norms: norms, heads: heads};
})"""


def api_runs(page, figures, lengths):
    """mhaLive.run(): the longest main-thread task from the call until its
    result has come back and the page has read every weight."""
    for length in lengths:
        longest = []
        for i in range(EDITS):
            n = length - i % 2
            page.evaluate("() => { window.mhaLong = []; }")
            got = page.evaluate(RUN_AND_READ, text_of(n))
            assert len(got["result"]["tokens"]) == n
            assert abs(got["rows"] - got["heads"] * n) < 1e-2 * n
            assert got["norms"] > 0
            page.wait_for_timeout(300)
            longest.append(page.evaluate(LONGEST))
        figures["run_longest"][length] = longest


def mask_changes(page, figures, lengths):
    """A head switched off or on in the grid, sentences A and B set: the
    lab's wait from the press to the last view drawn and to the similarity
    shown, and the longest main-thread task. The button is found once:
    Playwright's search by role walks the page on its main thread (over
    50 ms here), which the Long Tasks API would count as the lab's."""
    button = page.get_by_role("button", name=HEAD, exact=True)
    button = button.element_handle()
    for length in lengths:
        page.evaluate("([a, b]) => mhaLive.run(a, b)", list(pair_of(length)))
        button.scroll_into_view_if_needed()
        waited, similar, longest = [], [], []
        for _ in range(MASK_CHANGES):
            runs = page.evaluate("() => mhaLive.runs")
            page.evaluate("() => { window.mhaLong = []; }")
            button.click()
            page.wait_for_function(
                "(n) => mhaLive.runs > n", arg=runs, timeout=120_000
            )
            page.wait_for_timeout(300)
            waited.append(page.evaluate("() => mhaLive.waited"))
            similar.append(page.evaluate("() => mhaLive.similarityWaited"))
            longest.append(page.evaluate(LONGEST))
        figures["mask_waited"][length] = waited
        figures["mask_similarity"][length] = similar
        figures["mask_longest"][length] = longest


def browser_figures(base):
    from playwright.sync_api import sync_playwright

    figures = {
        "init": [],
        "model": {},
        "rerun": {},
        "bertviz": {},
        "matmul": {},
        "longest": {},
        "waited": {},
        "run_longest": {},
        "mask_waited": {},
        "mask_similarity": {},
        "mask_longest": {},
    }
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS
        )
        for round_ in range(INIT_ROUNDS):
            context = browser.new_context()
            context.route(
                "**/*",
                lambda r: (
                    r.continue_()
                    if r.request.url.startswith(base)
                    else r.abort()
                ),
            )
            page = context.new_page()
            fetched = []
            page.on(
                "response",
                lambda r, fetched=fetched: fetched.append(r),
            )
            page.goto(f"{base}/book/labs.html", wait_until="networkidle")
            if round_ == 0:
                figures["page_bytes"] = sum(len(r.body()) for r in fetched)
                figures["lab_bytes"] = page.evaluate(
                    "() => { const root = document.querySelector("
                    "'.mha-live'); const cell = root.closest('.output')"
                    " || root.parentElement; return new Blob("
                    "[cell.outerHTML]).size; }"
                )
            figures["init"].append(
                page.evaluate(
                    "async () => { const t = performance.now();"
                    " await mhaLive.load(); return performance.now() - t; }"
                )
            )
            if round_ < INIT_ROUNDS - 1:
                context.close()
        for length in LENGTHS:
            text = text_of(length)
            # Only the time comes back: not (L, h, T, T) numbers.
            attend = "(t) => mhaLive.attend(t, '').then((r) => r.ms)"
            page.evaluate(attend, text)  # warm up
            figures["model"][length] = [
                page.evaluate(attend, text) for _ in range(ROUNDS[length])
            ]
        for rows in LENGTHS:
            product, x = matmul_model(rows)
            figures["matmul"][rows] = page.evaluate(
                MATMUL,
                [
                    base64.b64encode(product).decode(),
                    x.ravel().tolist(),
                    rows,
                    ROUNDS[13],
                ],
            )
        # The reader's view while typing: the inputs and the explorer at the
        # top of the window, BertViz below it (drawn when scrolled to).
        page.evaluate("document.querySelector('.mha-live').scrollIntoView()")
        for length in (13, 32):
            text = text_of(length)
            page.evaluate("(t) => mhaLive.run(t, '').then(() => 0)", text)
            figures["rerun"][length] = [
                page.evaluate(RERUN, text) for _ in range(ROUNDS[13])
            ]
        # BertViz on screen: from the run's start until its view shows the
        # run's tokens and the browser has painted it.
        page.evaluate(
            "document.querySelector('.mha-live-bertviz').scrollIntoView()"
        )
        for length in (13, 32):
            text = text_of(length)
            page.evaluate(BERTVIZ, text_of(length + 1))
            figures["bertviz"][length] = [
                page.evaluate(BERTVIZ, text_of(length + i % 2))
                for i in range(ROUNDS[13] // 2)
            ]
        # A reader's edits and the page's API at longer lengths, every
        # view on screen (a window as tall as the lab); then mask changes
        # from the grid, in a desktop's window.
        page.set_viewport_size({"width": 1280, "height": 3000})
        page.evaluate("document.querySelector('.mha-live').scrollIntoView()")
        page.evaluate(LONG_TASKS)
        typed_edits(page, figures, (32, 128, 512))
        api_runs(page, figures, (32, 128, 512))
        page.set_viewport_size({"width": 1280, "height": 900})
        mask_changes(page, figures, (32, 128))
        browser.close()
    return figures


def python_figures(exported):
    import onnxruntime

    torch.set_num_threads(1)
    tokenizer, model = live.load_bert(bundled_path())
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(exported.model), options, providers=["CPUExecutionProvider"]
    )
    figures = {"ort": {}, "torch": {}, "matmul": {}}
    for length in LENGTHS:
        inputs = tokenizer(text_of(length), return_tensors="pt")
        assert inputs["input_ids"].shape[1] == length
        feed = {k: v.numpy() for k, v in inputs.items()}
        feed["head_mask"] = ablation.check_head_mask(
            None, exported.num_layers, exported.num_heads
        ).numpy()  # every head on

        def run_torch(inputs=inputs):
            with torch.no_grad():
                model(**inputs, output_attentions=True)

        product, x = matmul_model(length)
        matmul = onnxruntime.InferenceSession(
            product, options, providers=["CPUExecutionProvider"]
        )
        runs = (
            ("ort", lambda feed=feed: session.run(None, feed), length),
            ("torch", run_torch, length),
            ("matmul", lambda m=matmul, x=x: m.run(None, {"x": x}), 13),
        )
        for name, fn, rounds_of in runs:
            fn()  # warm up
            samples = []
            for _ in range(ROUNDS[rounds_of]):
                start = time.perf_counter()
                fn()
                samples.append(1000 * (time.perf_counter() - start))
            figures[name][length] = samples
    return figures


def onnx_sizes(exported):
    """Bytes of the lab's ONNX file; of the export that returns the
    attention weights alone, as the lab's was before Lab 3; and of that
    export trimmed as the lab's is now (live.emitted_ids, no exporter's
    notes). Both made once, cached beside the lab's."""
    sizes = [exported.model.stat().st_size]
    for name, lean in (("attentions-only", False), ("attentions-lean", True)):
        plain = exported.model.with_name(f"{name}.onnx")
        if not plain.exists():
            tokenizer, model = live.load_bert(bundled_path())
            kept = live.emitted_ids(tokenizer) if lean else None
            part = plain.with_suffix(".part")
            live.export_onnx(
                model,
                part,
                head_mask=False,
                kept=kept,
                unknown=tokenizer.unk_token_id,
                lean=lean,
            )
            part.rename(plain)
        sizes.append(plain.stat().st_size)
    return sizes


def main():
    exported = live.exported()
    sizes = onnx_sizes(exported)
    if not (SITE / live.SITE_FOLDER / "bert.onnx").exists():
        sys.exit(f"no live lab in {SITE}: run `make book` first")
    server, base = serve()
    try:
        web = browser_figures(base)
    finally:
        server.shutdown()
    py = python_figures(exported)
    print(
        f"labs page before the button: {web['page_bytes'] / 1e3:.0f} kB "
        f"fetched; the live lab's markup and scripts: "
        f"{web['lab_bytes'] / 1e3:.1f} kB"
    )
    model_mb = exported.model.stat().st_size / 1e6
    print(
        f"download ({model_mb:.0f} MB model + WebAssembly) + start, "
        f"ms: {summary(web['init'])[1]} over {INIT_ROUNDS} fresh loads"
    )
    print("\nper run of the model, ms: median [min, max]")
    print(
        f"{'T':>4} | {'browser (wasm, 1 thread)':>24} | "
        f"{'onnxruntime (1 thread)':>24} | {'PyTorch eager (1 thread)':>24}"
        f" | browser/ort | browser/torch"
    )
    for length in LENGTHS:
        b, b_text = summary(web["model"][length])
        o, o_text = summary(py["ort"][length])
        t, t_text = summary(py["torch"][length])
        print(
            f"{length:>4} | {b_text:>24} | {o_text:>24} | {t_text:>24} | "
            f"{b / o:11.2f} | {b / t:13.2f}"
        )
    print(
        "\none MatMul (T, 384) x (384, 1536), ms: median [min, max]\n"
        f"{'T':>4} | {'browser (wasm, 1 thread)':>24} | "
        f"{'onnxruntime (1 thread)':>24} | browser/ort"
    )
    for length in LENGTHS:
        b, b_text = summary(web["matmul"][length])
        o, o_text = summary(py["matmul"][length])
        print(f"{length:>4} | {b_text:>24} | {o_text:>24} | {b / o:11.2f}")
    print(
        "\nfull re-run in the page after an edit, ms: tokenize, run, update"
        " the explorer and the table, paint (BertViz off screen) | the same"
        " with BertViz on screen, until it is drawn and painted"
    )
    for length, samples in web["rerun"].items():
        print(
            f"  T = {length:>3}: {summary(samples)[1]} | "
            f"{summary(web['bertviz'][length])[1]}"
        )
    print(
        f"\nevery view on screen ({EDITS} rounds each), ms: the longest "
        f"main-thread task (target 200 at 128 tokens) after an edit typed "
        f"into the lab | after mhaLive.run(), its result handed back and "
        f"every weight read in the page | the wait from the typed edit to "
        f"the last view drawn, 250 ms of pause included"
    )
    for length, samples in web["longest"].items():
        print(
            f"  T = {length:>3}: {summary(samples)[1]} | "
            f"{summary(web['run_longest'][length])[1]} | "
            f"{summary(web['waited'][length])[1]}"
        )
    print(
        f"\na mask change in Lab 3's grid ({HEAD!r} pressed, sentences A "
        f"and B set; {MASK_CHANGES} each), ms: the wait from the press to "
        f"the last view drawn (target 250 at 32 tokens) | the longest "
        f"main-thread task (target 200) | the wait to the similarity shown "
        f"(A and B run alone, after the pair, while the views draw)"
    )
    for length, samples in web["mask_waited"].items():
        print(
            f"  T = {length:>3}: {summary(samples)[1]} | "
            f"{summary(web['mask_longest'][length])[1]} | "
            f"{summary(web['mask_similarity'][length])[1]}"
        )
    lab, plain, lean = sizes
    print(
        f"\nONNX file: {lab / 1e6:.2f} MB with the head mask, value norms "
        f"and last hidden states; {plain / 1e6:.2f} MB returning the "
        f"attention weights alone, as the lab's file before Lab 3: "
        f"{100 * (lab / plain - 1):+.1f}% (target +5%). The same export "
        f"without the rows of tokens never emitted and the exporter's "
        f"notes, as the lab's now: {lean / 1e6:.2f} MB, "
        f"{100 * (lab / lean - 1):+.1f}% for the outputs Lab 3 adds"
    )


if __name__ == "__main__":
    with recorded(
        "The live lab in the browser (`make bench-live`)", markdown=False
    ):
        main()
