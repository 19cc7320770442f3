/* The live lab: the bundled BERT runs in this page (onnxruntime-web, one
 * WebAssembly thread), on any sentence pair the reader types.
 *
 * The page loads wordpiece.js, then this file, after the lab's element,
 * which mhabook/views/live.py writes as <div class="mha-live" data-params=JSON>:
 *   {folder, model, wasm, runtime, vocab, download_bytes, name,
 *    num_layers, num_heads, max_tokens, colours, text_a, text_b, layer,
 *    query}
 * (one lab per page). Nothing is downloaded until the reader presses the
 * button. The head explorer (explorer.js) and BertViz's head view
 * (head_view.js) are the same templates Python fills; here they read their
 * parameters from window.mhaLive instead of pasted JSON. Every text from
 * the reader goes into the page through textContent.
 *
 * Page API (used by the tests and the benchmark), on window.mhaLive:
 *   load()            -> Promise: download and start the model (what the
 *                        button does).
 *   run(textA, textB, options) -> Promise of {tokens, attention,
 *                        valueNorms, similarity, similarityAll,
 *                        headMask}: put the texts in the inputs (and
 *                        options.headMask, L arrays of h numbers, 1 keep
 *                        and 0 off, all 1 when absent, in the head
 *                        grid), run the model, show the result in the
 *                        explorer and the table (BertViz follows: see
 *                        below). attention is nested arrays (L, h, T, T)
 *                        of the run for these texts and valueNorms
 *                        (L, h, T) each head's ||f_h(x_j)||, built when
 *                        read (the page shows them unless a later run
 *                        has replaced them). similarity is the cosine
 *                        of A's and B's sentence embeddings, each
 *                        sentence run alone under the mask (null when
 *                        textB is empty); similarityAll the same with
 *                        every head on. textB may be "". A mask of
 *                        another shape, or with values other than 0
 *                        and 1, rejects with a message naming the shape.
 *   attend(textA, textB) -> Promise of {tokens, token_type_ids, attention,
 *                        ms}: the model only, nothing shown; ms is the
 *                        time of the model's run.
 *   shown             -> the last {tokens, attention} shown, or null.
 *   waited            -> ms from the last edit to the last view drawn.
 *
 * The page never waits long on one task: the model runs in a worker
 * (live-worker.js), which also sums the table's shares; the views read
 * the weights through views of the worker's array, not copies. BertViz's
 * head view draws one SVG line per head and pair of tokens: it is drawn
 * only while it is on screen, after the other views, with as many heads
 * as fit BERTVIZ_LINES (the others one click away in its own colour
 * boxes), and not at all when one head would not fit; when it scrolls
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
  // What BertViz may draw at once: more lines hold up the page for more
  // than about 200 ms on a slow machine.
  const BERTVIZ_LINES = 2500;
  const OFF_GREY = "#8a8a8a"; // a head switched off
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
  inputB.id = "mha-live-text-b";
  inputB.value = params.text_b;
  // Sentence B is read after A: a reader who types only A clears it.
  const clearB = element("button", "mha-live-clear", "Clear");
  clearB.type = "button";
  clearB.setAttribute("aria-label", "Clear sentence B");
  clearB.disabled = inputB.value === "";
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
  const fieldB = element("div", "mha-live-field");
  const labelB = element("label", "", "Sentence B (optional)");
  labelB.htmlFor = inputB.id;
  const rowB = element("div", "mha-live-row");
  rowB.append(inputB, clearB);
  fieldB.append(labelB, rowB);
  form.append(labelled("Sentence A", inputA), fieldB);
  // The head grid: a button per head, pressed while the head is on.
  let headMask = allOn();
  const gridSlot = element("div", "mha-live-grid");
  const similarityLine = element("p", "mha-live-similarity");
  similarityLine.setAttribute("aria-live", "polite");
  const explorerSlot = element("div", "mha-live-explorer");
  const bertvizSlot = element("div", "mha-live-bertviz");
  bertvizSlot.append(element("p", "mha-live-note",
    "The head view is drawn when it scrolls into view."));
  const summarySlot = element("div", "mha-live-summary");
  const views = element("div", "mha-live-views");
  views.hidden = true;
  const explorerHeading = element("label", "mha-live-heading");
  explorerHeading.append("Head explorer of layer ", layerMenu);
  const headMenu = element("select", "mha-live-layer");
  const headField = element("label", "mha-live-heading");
  headField.append("Heads drawn in the head view: ", headMenu);
  headField.hidden = true;
  const staleNote = element("p", "mha-live-stale-note",
    "The views below still show the last text that ran: fix the text " +
    "above to update them.");
  staleNote.hidden = true;
  views.append(
    staleNote,
    explorerHeading,
    explorerSlot,
    element("p", "mha-live-heading",
      "BertViz head view (every layer: use its Layer menu)"),
    headField,
    bertvizSlot,
    element("p", "mha-live-heading",
      "Share of each head's attention on [CLS] and [SEP]"),
    summarySlot,
    element("p", "mha-live-heading", "Switch heads off"),
    gridSlot,
    similarityLine,
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
  let worker = null;
  let tokenizer = null;
  let loading = null;
  const waiting = new Map(); // message id -> {resolve, reject}
  let messages = 0;

  function ask(message, transfer) {
    message.id = ++messages;
    return new Promise((resolve, reject) => {
      waiting.set(message.id, { resolve, reject });
      worker.postMessage(message, transfer || []);
    });
  }

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
    worker = new Worker(base + "live-worker.js", { type: "module" });
    worker.onmessage = (event) => {
      const reply = event.data;
      const pending = waiting.get(reply.id);
      waiting.delete(reply.id);
      if (reply.error) {
        pending.reject(new Error(reply.error));
      } else {
        pending.resolve(reply);
      }
    };
    worker.onerror = (event) => {
      event.preventDefault();
      for (const pending of waiting.values()) {
        pending.reject(new Error("The model's worker stopped (" +
          (event.message || "no reason given") + "). " + SERVE_HINT));
      }
      waiting.clear();
    };
    try {
      await ask({ type: "load", runtime: base + params.runtime, wasm: wasm,
        model: model }, [wasm.buffer, model.buffer]);
    } catch (error) {
      throw new Error("Could not start onnxruntime-web (" + error.message +
        "). " + SERVE_HINT);
    }
    tokenizer = window.MhaWordPiece.fromVocab(vocab);
    buildGrid();
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

  function allOn() {
    return Array.from({ length: params.num_layers },
      () => new Array(params.num_heads).fill(1));
  }

  // options.headMask, checked: L arrays of h numbers, each 0 or 1.
  function checkMask(mask) {
    const L = params.num_layers;
    const h = params.num_heads;
    const shape = "a head mask must be " + L + " arrays (layers) of " + h +
      " numbers (heads), shape (" + L + ", " + h + "), each 1 (keep) or " +
      "0 (off)";
    if (mask === undefined || mask === null) {
      return allOn();
    }
    if (!Array.isArray(mask) || mask.length !== L ||
      mask.some((row) => !Array.isArray(row) || row.length !== h)) {
      throw new Error("Wrong shape: " + shape + ".");
    }
    if (mask.some((row) => row.some((v) => v !== 0 && v !== 1))) {
      throw new Error("Values other than 0 and 1: " + shape + ".");
    }
    return mask.map((row) => row.slice());
  }

  // The weights as views of the worker's array: [l][k][i] is query i's
  // row of head k in layer l, a Float32Array (no copy).
  function rows(data, L, h, T) {
    const attention = [];
    for (let l = 0; l < L; l++) {
      const layer = [];
      for (let k = 0; k < h; k++) {
        const head = [];
        for (let i = 0; i < T; i++) {
          const start = ((l * h + k) * T + i) * T;
          head.push(data.subarray(start, start + T));
        }
        layer.push(head);
      }
      attention.push(layer);
    }
    return attention; // (L, h, T, T)
  }

  // Plain nested arrays, for BertViz and for the page's API.
  function plain(attention) {
    return attention.map((layer) => layer.map((head) =>
      head.map((row) => Array.from(row))));
  }

  function withPlainAttention(result) {
    const { L, h, T } = result.shape;
    return {
      tokens: result.tokens,
      get attention() { return plain(result.attention); },
      get valueNorms() {
        return Array.from({ length: L }, (_, l) => Array.from({ length: h },
          (_, k) => Array.from(result.norms.subarray((l * h + k) * T,
            (l * h + k + 1) * T))));
      },
      similarity: result.similarity,
      similarityAll: result.similarityAll,
      headMask: result.headMask.map((row) => row.slice()),
    };
  }

  // The cosine of A's and B's embeddings, each sentence alone, under
  // `mask`; null when B is empty.
  async function similarity(textA, textB, mask) {
    if (String(textB || "").trim() === "") {
      return null;
    }
    const sentences = [textA, textB].map((text) => {
      const encoded = tokenizer.encode(text);
      return { input_ids: encoded.input_ids,
        token_type_ids: encoded.token_type_ids };
    });
    const reply = await ask({ type: "embed", sentences: sentences,
      head_mask: mask.flat(), mask_dims: [mask.length, mask[0].length] });
    const e = reply.embeddings;
    const C = e.length / 2;
    let dot = 0;
    for (let c = 0; c < C; c++) {
      dot += e[c] * e[C + c];
    }
    return dot;
  }
  const similarityCache = new Map(); // JSON [A, B] -> with every head on

  let queue = Promise.resolve();
  function attend(textA, textB, mask) {
    mask = mask || allOn();
    // One run at a time: a WebAssembly session is not re-entrant.
    const job = queue.then(async () => {
      await load();
      const encoded = encode(textA, textB);
      const T = encoded.tokens.length;
      const special = [];
      encoded.tokens.forEach((t, k) => {
        if (t === "[CLS]" || t === "[SEP]") {
          special.push(k);
        }
      });
      const reply = await ask({
        type: "run",
        input_ids: encoded.input_ids,
        token_type_ids: encoded.token_type_ids,
        special: special,
        head_mask: mask.flat(),
        mask_dims: [mask.length, mask[0].length],
      });
      const [, L, h] = reply.dims; // (1, L, h, T, T)
      const key = JSON.stringify([textA, textB || ""]);
      const everyHead = mask.every((row) => row.every((v) => v === 1));
      const now = await similarity(textA, textB, mask);
      if (everyHead) {
        similarityCache.set(key, now);
      } else if (!similarityCache.has(key)) {
        similarityCache.set(key, await similarity(textA, textB, allOn()));
      }
      while (similarityCache.size > 20) {
        similarityCache.delete(similarityCache.keys().next().value);
      }
      const result = {
        tokens: encoded.tokens,
        token_type_ids: encoded.token_type_ids,
        attention: rows(reply.data, L, h, T),
        norms: reply.norms,
        shape: { L, h, T },
        shares: reply.shares,
        similarity: now,
        similarityAll: similarityCache.get(key),
        headMask: mask,
        ms: reply.ms,
      };
      return result;
    });
    queue = job.catch(() => undefined);
    return job;
  }

  // 4. The views.
  const api = {
    shown: null,
    explorerParams: {},
    bertvizParams: {},
    waited: null,
    load: load,
    attend: (textA, textB, options) => Promise.resolve().then(() =>
      attend(textA, textB, checkMask((options || {}).headMask)))
      .then((result) => ({
      ...withPlainAttention(result),
      token_type_ids: result.token_type_ids,
      ms: result.ms,
    })),
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
    // At first, the word the page asks for (params.query), or the first
    // word; then the token the reader chose.
    const opening = params.query ? result.tokens.indexOf(params.query) : -1;
    const query = Math.min(pressed ? Number(pressed.dataset.index)
      : opening >= 0 ? opening : 1, result.tokens.length - 1);
    const value = {
      tokens: result.tokens,
      // A head switched off: grey, and "off" in its name.
      heads: result.attention[layer].map((weights, h) => ({
        name: "head " + h + (result.headMask[layer][h] ? "" : " (off)"),
        colour: result.headMask[layer][h]
          ? params.colours[h % params.colours.length] : OFF_GREY,
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

  // The head view's heads, in groups that fit BERTVIZ_LINES: the menu
  // picks the group drawn.
  function headGroups(T, h) {
    const fit = Math.min(h, Math.floor(BERTVIZ_LINES / (T * T)));
    const groups = [];
    for (let first = 0; fit > 0 && first < h; first += fit) {
      const heads = [];
      for (let k = first; k < Math.min(h, first + fit); k++) {
        heads.push(k);
      }
      groups.push(heads);
    }
    return groups;
  }

  function showHeadMenu(groups) {
    const labels = groups.map((heads) => heads.length === 1
      ? "head " + heads[0]
      : "heads " + heads[0] + "\u2013" + heads[heads.length - 1]);
    const current = Array.from(headMenu.options).map((o) => o.textContent);
    if (labels.join() !== current.join()) {
      const chosen = Math.min(Number(headMenu.value) || 0, labels.length - 1);
      headMenu.replaceChildren(...labels.map((label, i) => {
        const option = element("option", "", label);
        option.value = String(i);
        return option;
      }));
      headMenu.value = String(Math.max(0, chosen));
    }
    headField.hidden = groups.length < 2;
  }

  function showBertviz(result) {
    const tokens = result.tokens;
    const T = tokens.length;
    const h = result.attention[0].length;
    const groups = headGroups(T, h);
    showHeadMenu(groups);
    if (groups.length === 0) {
      bertvizSlot.replaceChildren(element("p", "mha-live-note",
        "At " + T + " tokens, one head of the head view would draw " +
        T * T + " lines, more than this page draws without holding up " +
        "your typing. The head explorer above and the table below show " +
        "every head; shorten the text to about " +
        Math.floor(Math.sqrt(BERTVIZ_LINES)) + " tokens to see the head " +
        "view."));
      return;
    }
    const heads = groups[Number(headMenu.value) || 0];
    const bStart = result.token_type_ids.indexOf(1);
    const all = result.attention.map((layer) => heads.map((k) =>
      layer[k].map((row) => Array.from(row))));
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
      heads: null, // every head of the group
      head_numbers: heads, // their numbers and colours, for the labels
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
    menus.lastChild.setAttribute("aria-label", "Layer");
    if (filters.length > 1) {
      const filter = element("select");
      filter.id = "filter";
      filter.setAttribute("aria-label", "Attention");
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
    const table = element("table", "mha-live-table");
    table.append(element("caption", "",
      "Rows: layers; columns: heads. Each cell: the share of attention, " +
      "averaged over all query tokens, that goes to [CLS] and [SEP]."));
    const L = result.attention.length;
    const h = result.attention[0].length;
    const head = element("tr");
    head.append(element("th", "", "layer"));
    for (let k = 0; k < h; k++) {
      const th = element("th", "", String(k));
      th.scope = "col";
      head.append(th);
    }
    table.append(head);
    for (let l = 0; l < L; l++) {
      const row = element("tr");
      const th = element("th", "", String(l));
      th.scope = "row";
      row.append(th);
      for (let k = 0; k < h; k++) {
        const share = result.shares[l * h + k];
        const on = result.headMask[l][k] === 1;
        const cell = element("td", "", share.toFixed(2) + (on ? "" : "\u00d7"));
        cell.style.setProperty("--mha-share", share.toFixed(3));
        if (!on) {
          cell.classList.add("mha-live-off");
          cell.title = "head " + k + " of layer " + l + " is switched off";
        }
        row.append(cell);
      }
      table.append(row);
    }
    summarySlot.replaceChildren(table);
  }

  // BertViz: drawn only on screen, after the other views (see the top).
  // Each update resolves once the head view is drawn, or left as it is.
  let bertvizVisible = false;
  let bertvizDrawn = null; // the result BertViz shows
  let bertvizWaiting = null;
  function updateBertviz() {
    if (!bertvizVisible || !last || last === bertvizDrawn) {
      return Promise.resolve();
    }
    if (!bertvizWaiting) {
      bertvizWaiting = nextFrame().then(async () => {
        bertvizWaiting = null;
        if (bertvizVisible && last !== bertvizDrawn) {
          bertvizDrawn = last;
          showBertviz(last);
          await drawn(bertvizSlot);
        }
      });
    }
    return bertvizWaiting;
  }
  new IntersectionObserver((entries) => {
    bertvizVisible = entries[entries.length - 1].isIntersecting;
    updateBertviz();
  }).observe(bertvizSlot);

  // After the next paint.
  function nextFrame() {
    return new Promise((resolve) =>
      requestAnimationFrame(() => setTimeout(resolve, 0)));
  }

  // Until BertViz, which draws once require.js has its libraries, has
  // drawn into `slot` (or gave up: at most 5 s), then painted.
  async function drawn(slot) {
    const until = performance.now() + 5000;
    while (slot.querySelector("script") && !slot.querySelector("#vis svg") &&
      performance.now() < until) {
      await nextFrame();
    }
    await nextFrame();
  }

  // The grid: rows are layers, a button per head (pressed: on). A row's
  // header button switches its whole layer; presets above.
  const gridButtons = [];
  function buildGrid() {
    const presets = element("div", "mha-live-presets");
    const everyHead = element("button", "mha-live-preset", "All heads on");
    everyHead.type = "button";
    everyHead.addEventListener("click", () => setMask(allOn()));
    const layerOff = element("select", "mha-live-layer");
    const none = element("option", "", "choose a layer");
    none.value = "";
    layerOff.append(none);
    for (let l = 0; l < params.num_layers; l++) {
      const option = element("option", "", "layer " + l);
      option.value = String(l);
      layerOff.append(option);
    }
    layerOff.addEventListener("change", () => {
      if (layerOff.value !== "") {
        const mask = allOn();
        mask[Number(layerOff.value)].fill(0);
        setMask(mask, true);
      }
    });
    presets.append(everyHead, labelled("Preset: one layer off (the " +
      "others on)", layerOff));
    const table = element("table", "mha-live-grid-table");
    // The caption outside the table, which scrolls sideways on a phone.
    const caption = element("p", "mha-live-note",
      "Rows: layers; columns: heads. A pressed button is a head on; " +
      "press it to switch the head off (\u00d7, grey). The row's " +
      "button switches the whole layer.");
    table.setAttribute("aria-label", "Head grid: layers by heads");
    const header = element("tr");
    header.append(element("th", "", "layer"));
    for (let k = 0; k < params.num_heads; k++) {
      const th = element("th", "", String(k));
      th.scope = "col";
      header.append(th);
    }
    table.append(header);
    for (let l = 0; l < params.num_layers; l++) {
      const row = element("tr");
      const th = element("th");
      th.scope = "row";
      const whole = element("button", "mha-live-layer-switch", String(l));
      whole.type = "button";
      whole.setAttribute("aria-label", "Switch layer " + l + " off or on");
      whole.addEventListener("click", () => {
        const mask = headMask.map((r) => r.slice());
        const anyOn = mask[l].some((v) => v === 1);
        mask[l].fill(anyOn ? 0 : 1);
        setMask(mask);
      });
      th.append(whole);
      row.append(th);
      gridButtons[l] = [];
      for (let k = 0; k < params.num_heads; k++) {
        const cell = element("td");
        const button = element("button", "mha-live-head");
        button.type = "button";
        button.setAttribute("aria-label", "Layer " + l + ", head " + k);
        button.style.setProperty("--mha-colour",
          params.colours[k % params.colours.length]);
        button.addEventListener("click", () => {
          const mask = headMask.map((r) => r.slice());
          mask[l][k] = 1 - mask[l][k];
          setMask(mask);
        });
        gridButtons[l].push(button);
        cell.append(button);
        row.append(cell);
      }
      table.append(row);
    }
    const wrap = element("div", "mha-live-grid-scroll");
    wrap.append(table);
    gridSlot.replaceChildren(presets, wrap, caption);
    showGrid();
  }

  function showGrid() {
    gridButtons.forEach((buttons, l) => buttons.forEach((button, k) => {
      const on = headMask[l][k] === 1;
      button.setAttribute("aria-pressed", String(on));
      button.textContent = on ? String(k) : "\u00d7";
      button.classList.toggle("mha-live-off", !on);
    }));
  }

  function setMask(mask, fromPreset) {
    if (!fromPreset) {
      gridSlot.querySelector("select").value = "";
    }
    headMask = mask;
    showGrid();
    editedAt = performance.now();
    if (worker) {
      rerun().catch(() => undefined);
    }
  }

  function showSimilarity(result) {
    const off = result.headMask.flat().filter((v) => v === 0).length;
    const total = params.num_layers * params.num_heads;
    const state = off === 0 ? "Every head is on. "
      : off === total ? "Every head is off: each layer adds only its " +
        "output projection's bias and its feed-forward part, and the " +
        "similarity is still defined. "
        : off + " of " + total + " heads are off. ";
    if (result.similarity === null) {
      similarityLine.textContent = state + "Type sentence B to see the " +
        "similarity of A and B (each sentence run alone, its tokens " +
        "averaged, then the cosine).";
      return;
    }
    similarityLine.textContent = state + "Similarity of A and B (the " +
      "cosine of their sentence embeddings, each sentence run alone): " +
      result.similarityAll.toFixed(3) + " with every head on, " +
      result.similarity.toFixed(3) + " now.";
  }

  function show(result) {
    views.classList.remove("mha-stale");
    staleNote.hidden = true;
    showExplorer(result);
    showSummary(result);
    showSimilarity(result);
    last = result;
    api.shown = withPlainAttention(result);
    return updateBertviz();
  }

  let latest = 0;
  let editedAt = 0; // when the reader last changed the text
  async function run(textA, textB, options) {
    const mask = checkMask((options || {}).headMask);
    headMask = mask;
    if (gridButtons.length) {
      gridSlot.querySelector("select").value = "";
    }
    showGrid();
    inputA.value = textA;
    inputB.value = textB || "";
    clearB.disabled = inputB.value === "";
    editedAt = performance.now();
    return rerun();
  }

  async function rerun() {
    const ticket = ++latest;
    const since = editedAt || performance.now();
    try {
      const result = await attend(inputA.value, inputB.value, headMask);
      if (ticket === latest) {
        await show(result);
        await nextFrame();
        api.waited = performance.now() - since;
        const read = result.token_type_ids.includes(1)
          ? "sentence A, then sentence B" : "sentence A alone";
        say("Ran " + params.name + " on " + result.tokens.length +
          " tokens: " + read + ". " + api.waited.toFixed(0) +
          " ms from your last edit " +
          "to the last view drawn (the model itself: " +
          result.ms.toFixed(0) + " ms).");
      }
      return withPlainAttention(result);
    } catch (error) {
      if (ticket === latest) {
        say(error.message, true);
        if (last) {
          views.classList.add("mha-stale");
          staleNote.hidden = false;
        }
      }
      throw error;
    }
  }

  // 5. Wiring: the button, debounced edits, the menus.
  loadButton.addEventListener("click", () => {
    load().then(rerun).catch(() => undefined);
  });
  let timer = null;
  clearB.addEventListener("click", () => {
    inputB.value = "";
    inputB.dispatchEvent(new Event("input"));
    inputB.focus();
  });
  for (const input of [inputA, inputB]) {
    input.addEventListener("input", () => {
      clearB.disabled = inputB.value === "";
      editedAt = performance.now();
      if (!worker) {
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
  headMenu.addEventListener("change", () => {
    if (last && bertvizVisible) {
      bertvizDrawn = last;
      showBertviz(last);
    } else {
      bertvizDrawn = null;
    }
  });
  window.mhaLive = api;
})();
