/* The live lab: the bundled BERT runs in this page (onnxruntime-web, one
 * WebAssembly thread), on any sentence pair the reader types.
 *
 * The page loads wordpiece.js, then this file, after the lab's element,
 * which mhabook/live.py writes as <div class="mha-live" data-params=JSON>:
 *   {folder, model, wasm, runtime, vocab, download_bytes, name,
 *    num_layers, num_heads, max_tokens, colours, text_a, text_b, layer}
 * (one lab per page). Nothing is downloaded until the reader presses the
 * button. The head explorer (explorer.js) and BertViz's head view
 * (head_view.js) are the same templates Python fills; here they read their
 * parameters from window.mhaLive instead of pasted JSON. Every text from
 * the reader goes into the page through textContent.
 *
 * Page API (used by the tests and the benchmark), on window.mhaLive:
 *   load()            -> Promise: download and start the model (what the
 *                        button does).
 *   run(textA, textB) -> Promise of {tokens, attention}: put the texts in
 *                        the inputs, run the model, show the result in
 *                        the explorer and the table (BertViz follows:
 *                        see below). attention is nested arrays
 *                        (L, h, T, T) of the run for these texts (the
 *                        page shows it unless a later run has replaced
 *                        it). textB may be "" (one sentence).
 *   attend(textA, textB) -> Promise of {tokens, token_type_ids, attention,
 *                        ms}: the model only, nothing shown; ms is the
 *                        time of the model's run.
 *   shown             -> the last {tokens, attention} shown, or null.
 *
 * BertViz's head view draws 12 x T x T SVG lines, which takes longer than
 * the model and the other views together (about 0.2 s at 13 tokens and 1 s
 * at 32 on a 2-core machine): it is drawn only while it is on screen, in a
 * task of its own after the other views have painted, and when it scrolls
 * into view it catches up with the last run.
 * Errors (empty text, too many tokens, a failed download) reject the
 * promise with an Error whose message the lab also shows.
 */
(function () {
  "use strict";
  const root = document.querySelector(".mha-live[data-params]");
  if (!root || root.dataset.ready) {
    return;
  }
  const params = JSON.parse(root.dataset.params);
  root.dataset.ready = "true";
  root.textContent = "";

  const contentRoot = document.documentElement.dataset.content_root || "../";
  const siteRoot = new URL(contentRoot, location.href).href;
  const base = siteRoot + params.folder + "/";
  const bundled = siteRoot + "_static/bundled";
  const megabytes = (bytes) => (bytes / 1e6).toFixed(0) + " MB";
  const SERVE_HINT =
    "Serve the built site over http instead: in its folder (_build/html), " +
    "run `python -m http.server`, then open " +
    "http://localhost:8000/book/labs.html.";

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) {
      node.className = className;
    }
    if (text !== undefined) {
      node.textContent = text;
    }
    return node;
  }

  function labelled(labelText, control) {
    const label = element("label", "mha-live-field");
    label.append(element("span", "", labelText), control);
    return label;
  }

  // 1. The controls.
  const inputA = element("input", "mha-live-text");
  inputA.type = "text";
  inputA.value = params.text_a;
  const inputB = element("input", "mha-live-text");
  inputB.type = "text";
  inputB.value = params.text_b;
  const layerMenu = element("select", "mha-live-layer");
  for (let l = 0; l < params.num_layers; l++) {
    const option = element("option", "", String(l));
    option.value = String(l);
    layerMenu.append(option);
  }
  layerMenu.value = String(params.layer);
  const loadButton = element("button", "mha-live-load",
    "Download the model (" + megabytes(params.download_bytes) +
    ") and run it in this page");
  loadButton.type = "button";
  const progress = element("progress", "mha-live-progress");
  progress.max = 1;
  progress.value = 0;
  progress.hidden = true;
  progress.setAttribute("aria-label", "Download progress");
  const status = element("p", "mha-live-status");
  status.setAttribute("role", "status");
  status.setAttribute("aria-live", "polite");
  status.textContent = "The model (" + params.name + ", " +
    params.num_layers + " layers \u00d7 " + params.num_heads + " heads) " +
    "runs in your browser after a one-time download of " +
    megabytes(params.download_bytes) + ". Nothing is sent anywhere.";

  const form = element("div", "mha-live-form");
  form.append(
    labelled("Sentence A", inputA),
    labelled("Sentence B (optional)", inputB),
  );
  const explorerSlot = element("div", "mha-live-explorer");
  const bertvizSlot = element("div", "mha-live-bertviz");
  bertvizSlot.append(element("p", "mha-live-note",
    "The head view is drawn when it scrolls into view."));
  const summarySlot = element("div", "mha-live-summary");
  const views = element("div", "mha-live-views");
  views.hidden = true;
  const explorerHeading = element("label", "mha-live-heading");
  explorerHeading.append("Head explorer of layer ", layerMenu);
  views.append(
    explorerHeading,
    explorerSlot,
    element("p", "mha-live-heading",
      "BertViz head view (every layer: use its Layer menu)"),
    bertvizSlot,
    element("p", "mha-live-heading",
      "Share of each head's attention on [CLS] and [SEP]"),
    summarySlot,
  );
  root.append(form, loadButton, progress, status, views);

  function say(text, isError) {
    status.textContent = text;
    status.dataset.state = isError ? "error" : "ok";
  }

  // 2. Downloads, with progress over everything the button promised.
  let received = 0;
  async function download(url, asText) {
    let response;
    try {
      response = await fetch(url);
    } catch (error) {
      throw new Error("Could not download " + url.split("/").pop() +
        " (" + error.message + "). " + SERVE_HINT);
    }
    if (!response.ok) {
      throw new Error("Could not download " + url.split("/").pop() +
        " (HTTP " + response.status + "). " + SERVE_HINT);
    }
    if (asText) {
      return response.text();
    }
    const reader = response.body.getReader();
    const chunks = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        break;
      }
      chunks.push(value);
      received += value.length;
      progress.value = Math.min(1, received / params.download_bytes);
    }
    const blob = new Blob(chunks);
    return new Uint8Array(await blob.arrayBuffer());
  }

  const templates = {};
  let ort = null;
  let session = null;
  let tokenizer = null;
  let loading = null;

  function load() {
    if (!loading) {
      loading = start().catch((error) => {
        loading = null;
        loadButton.disabled = false;
        progress.hidden = true;
        say(error.message, true);
        throw error;
      });
    }
    return loading;
  }

  async function start() {
    if (typeof WebAssembly !== "object") {
      throw new Error("This browser cannot run WebAssembly, which the " +
        "live model needs. Open the page in a current Firefox, Chrome, " +
        "Edge or Safari, or run the notebook.");
    }
    if (location.protocol === "file:") {
      throw new Error("This page was opened as a file (file://), from " +
        "which browsers do not let it load the model. " + SERVE_HINT);
    }
    loadButton.disabled = true;
    progress.hidden = false;
    received = 0;
    say("Downloading the model and the runtime (" +
      megabytes(params.download_bytes) + ")\u2026");
    const [vocab, explorerJs, headViewJs, wasm, model] = await Promise.all([
      download(base + params.vocab, true),
      download(base + "explorer.js", true),
      download(base + "head_view.js", true),
      download(base + params.wasm),
      download(base + params.model),
    ]);
    say("Starting the model\u2026");
    try {
      ort = await import(base + params.runtime);
    } catch (error) {
      throw new Error("Could not load onnxruntime-web (" + error.message +
        "). " + SERVE_HINT);
    }
    ort.env.wasm.numThreads = 1; // no SharedArrayBuffer needed
    ort.env.wasm.proxy = false;
    ort.env.wasm.wasmBinary = wasm;
    session = await ort.InferenceSession.create(model, {
      executionProviders: ["wasm"],
    });
    tokenizer = window.MhaWordPiece.fromVocab(vocab);
    templates.explorer = explorerJs;
    templates.headView = headViewJs.replace(/MHA_BUNDLED/g, bundled);
    progress.hidden = true;
    loadButton.hidden = true;
    views.hidden = false;
    say("Model ready. Edit the sentences: every edit re-runs it.");
  }

  // 3. One run of the model.
  function encode(textA, textB) {
    if (String(textA).trim() === "") {
      throw new Error("Sentence A is empty: type a sentence to run the " +
        "model on.");
    }
    const encoded = tokenizer.encode(textA, String(textB || "").trim() ?
      textB : undefined);
    const count = encoded.tokens.length;
    if (count > params.max_tokens) {
      throw new Error("The text is " + count + " tokens long, but the " +
        "model reads at most " + params.max_tokens + " (its position " +
        "table): shorten the sentences.");
    }
    return encoded;
  }

  function nested(data, L, h, T) {
    const attention = [];
    for (let l = 0; l < L; l++) {
      const layer = [];
      for (let k = 0; k < h; k++) {
        const head = [];
        for (let i = 0; i < T; i++) {
          const start = ((l * h + k) * T + i) * T;
          head.push(Array.from(data.subarray(start, start + T)));
        }
        layer.push(head);
      }
      attention.push(layer);
    }
    return attention; // (L, h, T, T)
  }

  let queue = Promise.resolve();
  function attend(textA, textB) {
    // One run at a time: a WebAssembly session is not re-entrant.
    const job = queue.then(async () => {
      await load();
      const encoded = encode(textA, textB);
      const T = encoded.tokens.length;
      const tensor = (values) => new ort.Tensor("int64",
        BigInt64Array.from(values, (v) => BigInt(v)), [1, T]);
      const feeds = {
        input_ids: tensor(encoded.input_ids),
        attention_mask: tensor(encoded.input_ids.map(() => 1)),
        token_type_ids: tensor(encoded.token_type_ids),
      };
      const began = performance.now();
      const outputs = await session.run(feeds);
      const ms = performance.now() - began;
      const [, L, h] = outputs.attentions.dims; // (1, L, h, T, T)
      return {
        tokens: encoded.tokens,
        token_type_ids: encoded.token_type_ids,
        attention: nested(outputs.attentions.data, L, h, T),
        ms: ms,
      };
    });
    queue = job.catch(() => undefined);
    return job;
  }

  // 4. The views.
  const api = {
    shown: null,
    explorerParams: {},
    bertvizParams: {},
    load: load,
    attend: attend,
    run: run,
  };
  let serial = 0;
  let last = null; // the last result shown

  // Give a template its parameters through window.mhaLive; returns the
  // element id the view must use and the script that draws it.
  function inject(template, marker, name, value) {
    const id = "mha-live-" + name + "-" + (++serial);
    value.id = value.root_div_id = id;
    // BertViz draws once require.js has loaded its libraries, maybe after
    // the next edit: keep the last few views' parameters, not all.
    const store = api[name + "Params"];
    store[id] = value;
    for (const old of Object.keys(store).slice(0, -3)) {
      delete store[old];
    }
    const script = document.createElement("script");
    script.textContent = template.replaceAll(marker,
      "window.mhaLive." + name + "Params[" + JSON.stringify(id) + "]");
    return [id, script];
  }

  function showExplorer(result) {
    const layer = Number(layerMenu.value);
    const pressed = explorerSlot.querySelector(".mha-token[aria-pressed=true]");
    const query = Math.min(pressed ? Number(pressed.dataset.index) : 0,
      result.tokens.length - 1);
    const value = {
      tokens: result.tokens,
      heads: result.attention[layer].map((weights, h) => ({
        name: "head " + h,
        colour: params.colours[h % params.colours.length],
        weights: weights,
      })),
      query: query,
      title: "Layer " + layer + " of " + params.name + ", live",
    };
    const [id, script] = inject(templates.explorer, "EXPLORER_PARAMS",
      "explorer", value);
    const holder = element("div", "mha-explorer-root");
    holder.id = id;
    explorerSlot.replaceChildren(holder, script);
  }

  function showBertviz(result) {
    const tokens = result.tokens;
    const T = tokens.length;
    const bStart = result.token_type_ids.indexOf(1);
    const all = result.attention;
    const slice = (rows, cols) => all.map((layer) => layer.map((head) =>
      head.slice(rows[0], rows[1]).map((row) => row.slice(cols[0], cols[1]))));
    const filters = [{ name: "All", attn: all, left_text: tokens,
      right_text: tokens }];
    if (bStart > 0) {
      const a = [0, bStart];
      const b = [bStart, T];
      const pairs = [["Sentence A -> Sentence A", a, a],
        ["Sentence B -> Sentence B", b, b],
        ["Sentence A -> Sentence B", a, b],
        ["Sentence B -> Sentence A", b, a]];
      for (const [name, rows, cols] of pairs) {
        filters.push({ name: name, attn: slice(rows, cols),
          left_text: tokens.slice(rows[0], rows[1]),
          right_text: tokens.slice(cols[0], cols[1]) });
      }
    }
    const layer = Number(layerMenu.value);
    const value = {
      attention: filters,
      default_filter: "0",
      layer: layer,
      heads: null, // all heads
      include_layers: all.map((_, l) => l),
    };
    const [id, script] = inject(templates.headView, "PYTHON_PARAMS",
      "bertviz", value);
    // The markup BertViz's Python writes around its script.
    const view = element("div", "mha-live-headview");
    view.id = id;
    const menus = element("span");
    menus.style.userSelect = "none";
    menus.append("Layer: ", element("select"));
    menus.lastChild.id = "layer";
    if (filters.length > 1) {
      const filter = element("select");
      filter.id = "filter";
      filters.forEach((f, i) => {
        const option = element("option", "", f.name);
        option.value = String(i);
        filter.append(option);
      });
      menus.append(" Attention: ", filter);
    }
    const vis = element("div");
    vis.id = "vis";
    view.append(menus, vis);
    if (typeof window.requirejs !== "function") {
      bertvizSlot.replaceChildren(element("p", "",
        "BertViz needs require.js, which this page does not load."));
      return;
    }
    bertvizSlot.replaceChildren(view, script);
  }

  function showSummary(result) {
    const special = result.tokens.map((t) => t === "[CLS]" || t === "[SEP]");
    const table = element("table", "mha-live-table");
    table.append(element("caption", "",
      "Rows: layers; columns: heads. Each cell: the share of attention, " +
      "averaged over all query tokens, that goes to [CLS] and [SEP]."));
    const head = element("tr");
    head.append(element("th", "", "layer"));
    result.attention[0].forEach((_, h) => {
      const th = element("th", "", String(h));
      th.scope = "col";
      head.append(th);
    });
    table.append(head);
    result.attention.forEach((layer, l) => {
      const row = element("tr");
      const th = element("th", "", String(l));
      th.scope = "row";
      row.append(th);
      layer.forEach((weights) => {
        let share = 0;
        weights.forEach((queryRow) => {
          queryRow.forEach((w, k) => { share += special[k] ? w : 0; });
        });
        share /= weights.length;
        const cell = element("td", "", share.toFixed(2));
        cell.style.setProperty("--mha-share", share.toFixed(3));
        row.append(cell);
      });
      table.append(row);
    });
    summarySlot.replaceChildren(table);
  }

  // BertViz: drawn only on screen, after the other views (see the top).
  let bertvizVisible = false;
  let bertvizDrawn = null; // the result BertViz shows
  let bertvizWaiting = false;
  function updateBertviz() {
    if (!bertvizVisible || !last || last === bertvizDrawn || bertvizWaiting) {
      return;
    }
    bertvizWaiting = true;
    requestAnimationFrame(() => setTimeout(() => {
      bertvizWaiting = false;
      if (bertvizVisible && last !== bertvizDrawn) {
        bertvizDrawn = last;
        showBertviz(last);
      }
    }));
  }
  new IntersectionObserver((entries) => {
    bertvizVisible = entries[entries.length - 1].isIntersecting;
    updateBertviz();
  }).observe(bertvizSlot);

  function show(result) {
    showExplorer(result);
    showSummary(result);
    last = result;
    api.shown = { tokens: result.tokens, attention: result.attention };
    updateBertviz();
  }

  let latest = 0;
  async function run(textA, textB) {
    inputA.value = textA;
    inputB.value = textB || "";
    return rerun();
  }

  async function rerun() {
    const ticket = ++latest;
    try {
      const result = await attend(inputA.value, inputB.value);
      if (ticket === latest) {
        const began = performance.now();
        show(result);
        const total = result.ms + performance.now() - began;
        say("Ran " + params.name + " on " + result.tokens.length +
          " tokens in " + total.toFixed(0) + " ms.");
      }
      return { tokens: result.tokens, attention: result.attention };
    } catch (error) {
      if (ticket === latest) {
        say(error.message, true);
      }
      throw error;
    }
  }

  // 5. Wiring: the button, debounced edits, the layer menu.
  loadButton.addEventListener("click", () => {
    load().then(rerun).catch(() => undefined);
  });
  let timer = null;
  for (const input of [inputA, inputB]) {
    input.addEventListener("input", () => {
      if (!session) {
        return;
      }
      clearTimeout(timer);
      timer = setTimeout(() => rerun().catch(() => undefined), 250);
    });
  }
  layerMenu.addEventListener("change", () => {
    if (last) {
      showExplorer(last);
    }
  });
  window.mhaLive = api;
})();
