"""The live lab's speed: the bundled BERT in headless Chromium against
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
- a full re-run in the page (tokenize, run, draw the views) at T = 13
  and 32, the reader's wait after an edit (target: 250 ms at 32).

Targets (2-core machine): re-run <= 250 ms for up to 32 tokens;
browser / onnxruntime-python <= 3x; lab markup <= 200 KB.
"""

import functools
import http.server
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book"))

from mhabook import live  # noqa: E402
from mhabook.checkpoint import bundled_path  # noqa: E402

SITE = ROOT / "_build" / "html"
LENGTHS = [13, 64, 128, 512]
ROUNDS = {13: 15, 64: 10, 128: 10, 512: 5}
INIT_ROUNDS = 3
WORDS = ["the", "cat", "sat", "on", "mat", "and", "it", "was", "tired"]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu"]


def text_of(length):
    """A sentence of one-token words: [CLS] + words + [SEP] = length."""
    return " ".join(WORDS[i % len(WORDS)] for i in range(length - 2))


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


def browser_figures(base):
    from playwright.sync_api import sync_playwright

    figures = {"init": [], "model": {}, "rerun": {}}
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
        for length in (13, 32):
            text = text_of(length)
            page.evaluate("(t) => mhaLive.run(t, '').then(() => 0)", text)
            figures["rerun"][length] = [
                page.evaluate(
                    "async (t) => { const s = performance.now();"
                    " await mhaLive.run(t, ''); await new Promise("
                    "r => requestAnimationFrame(() => setTimeout(r)));"
                    " return performance.now() - s; }",
                    text,
                )
                for _ in range(ROUNDS[13])
            ]
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
    figures = {"ort": {}, "torch": {}}
    for length in LENGTHS:
        inputs = tokenizer(text_of(length), return_tensors="pt")
        assert inputs["input_ids"].shape[1] == length
        feed = {k: v.numpy() for k, v in inputs.items()}

        def run_ort(feed=feed):
            session.run(None, feed)

        def run_torch(inputs=inputs):
            with torch.no_grad():
                model(**inputs, output_attentions=True)

        for name, fn in (("ort", run_ort), ("torch", run_torch)):
            fn()  # warm up
            samples = []
            for _ in range(ROUNDS[length]):
                start = time.perf_counter()
                fn()
                samples.append(1000 * (time.perf_counter() - start))
            figures[name][length] = samples
    return figures


def main():
    exported = live.exported()
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
    print("\nfull re-run in the page (tokenize, run, draw), ms:")
    for length, samples in web["rerun"].items():
        print(f"  T = {length:>3}: {summary(samples)[1]}")


if __name__ == "__main__":
    main()
