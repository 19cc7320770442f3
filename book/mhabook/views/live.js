/* The live lab: the bundled model runs in this page (onnxruntime-web, one
 * WebAssembly thread), on any sentence pair the reader types.
 *
 * mhabook/views/live.py writes the lab's element,
 *   <div class="mha-live" data-params=JSON> with BertViz's markup in two
 *   <template class="mha-live-headview"> elements,
 * where JSON is {folder, model, wasm, runtime, vocab, download_bytes, name,
 * num_layers, num_heads, max_tokens, colours, text_a, text_b, layer,
 * query, ranking, ranking_page} (one lab per page), then loads the lab's
 * scripts in order: wordpiece.js (the tokenizer), live-readings.js (three
 * ways to read attention), live-client.js (the model's worker),
 * live-state.js (the head mask, the runs and their results), one file per
 * view (live-explorer.js, live-grid.js, live-table.js, live-bertviz.js),
 * and this file, which lays the lab out, wires it and gives the page its
 * API. Nothing is downloaded until the reader presses the button. Every
 * text from the reader goes into the page through textContent.
 *
 * Page API (used by the tests and the benchmark), on window.mhaLive:
 *   load()            -> Promise: download and start the model (what the
 *                        button does).
 *   run(textA, textB, options) -> Promise of a result: put the texts in
 *                        the inputs (and options.headMask, L arrays of h
 *                        numbers, 1 keep and 0 off, all 1 when absent, in
 *                        the head grid), run the model, show the result.
 *                        A result (live-state.js) has tokens; attention
 *                        (L, h, T, T) and valueNorms (L, h, T), each
 *                        head's ||f_h(x_j)||, nested arrays of Float32Array
 *                        rows read through getters; similarity, the cosine
 *                        of A's and B's sentence embeddings, each sentence
 *                        run alone under the mask (null when textB is
 *                        empty); similarityAll, the same with every head
 *                        on; headMask; and methods valueWeighted()
 *                        (L, h, T, T) and rollout() (L, T, T). textB may
 *                        be "". A mask of another shape, or with values
 *                        other than 0 and 1, rejects with a message naming
 *                        the shape.
 *   attend(textA, textB, options) -> Promise of the same result, with
 *                        token_type_ids and ms (the model's run): the
 *                        model only, nothing shown.
 *   shown             -> the last result shown, or null.
 *   waited            -> ms from the last edit to the last view drawn.
 *   similarityWaited  -> ms from the last edit to the similarity shown
 *                        (A and B run alone after the pair, while the
 *                        views draw).
 *   runs              -> how many runs have been shown.
 *
 * The page never waits long on one task: the model runs in a worker,
 * which also sums the table's shares and rolls attention out; the views
 * and the API read the weights through views of the worker's arrays, not
 * copies, and a result serialised whole carries its small fields alone
 * (a million weights at 128 tokens, walked one by one, held the page for
 * over a second).
 * Errors (empty text, too many tokens, a failed download) reject the
 * promise with an Error whose message the lab also shows.
 */
(function () {
  "use strict";
  const root = document.querySelector(".mha-live[data-params]");
  if (!root || root.dataset.ready) {
    return;
  }
  const MhaLive = window.MhaLive;
  const params = JSON.parse(root.dataset.params);
  const markup = {};
  for (const template of root.querySelectorAll("template.mha-live-headview")) {
    markup[template.dataset.filters] = template;
  }
  root.dataset.ready = "true";
  root.textContent = "";

  const contentRoot = document.documentElement.dataset.content_root || "../";
  const siteRoot = new URL(contentRoot, location.href).href;
  const base = siteRoot + params.folder + "/";
  const bundled = siteRoot + "_static/bundled";
  const megabytes = (bytes) => (bytes / 1e6).toFixed(0) + " MB";

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

  function nextFrame() {
    return new Promise((resolve) =>
      requestAnimationFrame(() => setTimeout(resolve, 0)));
  }

  // 1. The controls, the status line and the views.
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
  const labelA = element("label", "mha-live-field");
  labelA.append(element("span", "", "Sentence A"), inputA);
  const fieldB = element("div", "mha-live-field");
  const labelB = element("label", "", "Sentence B (optional)");
  labelB.htmlFor = inputB.id;
  const rowB = element("div", "mha-live-row");
  rowB.append(inputB, clearB);
  fieldB.append(labelB, rowB);
  form.append(labelA, fieldB);

  const lab = new MhaLive.Lab(params);
  const explorer = new MhaLive.ExplorerView(lab, params, redrawExplorer);
  const grid = new MhaLive.GridView(lab, params, maskChanged);
  const table = new MhaLive.TableView();
  const bertviz = new MhaLive.BertvizView(markup, () => explorer.layer);
  const views = element("div", "mha-live-views");
  views.hidden = true;
  const staleNote = element("p", "mha-live-stale-note",
    "The views below still show the last text that ran: fix the text " +
    "above to update them.");
  staleNote.hidden = true;
  views.append(staleNote, explorer.element, grid.element, table.element,
    bertviz.element);
  root.append(form, loadButton, progress, status, views);

  function say(text, isError) {
    status.textContent = text;
    status.dataset.state = isError ? "error" : "ok";
  }

  // 2. Loading: downloads with progress, then the worker and the views'
  // templates.
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
    const client = new MhaLive.Client(params, base, (share) => {
      progress.value = share;
    });
    loadButton.disabled = true;
    progress.hidden = false;
    say("Downloading the model and the runtime (" +
      megabytes(params.download_bytes) + ")\u2026");
    const texts = await client.start();
    lab.client = client;
    lab.tokenizer = window.MhaWordPiece.fromVocab(texts.vocab);
    explorer.setTemplate(texts.explorer);
    bertviz.setTemplate(texts.headView, bundled);
    progress.hidden = true;
    loadButton.hidden = true;
    views.hidden = false;
    say("Model ready. Edit the sentences or switch heads off: every " +
      "change re-runs it.");
  }

  // 3. Runs, and the views that show them.
  const api = {
    shown: null,
    waited: null,
    similarityWaited: null,
    runs: 0,
    load: load,
    attend: async (textA, textB, options) => {
      const mask = lab.checkMask((options || {}).headMask);
      await load();
      return (await lab.attend(textA, textB, mask, false)).complete;
    },
    run: run,
  };
  let latest = 0;
  let editedAt = 0; // when the reader last edited the text or the mask

  // The views of the pair's run; the similarity line says it is coming.
  async function show(result) {
    views.classList.remove("mha-stale");
    staleNote.hidden = true;
    grid.showSimilarity(result, true);
    await explorer.show(result);
    table.show(result);
    api.shown = result;
    return bertviz.show(result);
  }

  async function run(textA, textB, options) {
    lab.mask = lab.checkMask((options || {}).headMask);
    grid.showMask();
    inputA.value = textA;
    inputB.value = textB || "";
    clearB.disabled = inputB.value === "";
    editedAt = performance.now();
    return rerun(true);
  }

  // The pair runs, the views draw; meanwhile the worker encodes A and B
  // alone, and the similarity line follows. fromApi: run() waits for the
  // similarity even if an edit comes in meanwhile.
  async function rerun(fromApi) {
    const ticket = ++latest;
    const since = editedAt || performance.now();
    try {
      await load();
      const result = await lab.attend(inputA.value, inputB.value, lab.mask,
        lab.reading === "rollout", !fromApi);
      if (ticket === latest) {
        await show(result);
        await nextFrame();
        api.waited = performance.now() - since;
      }
      await result.complete;
      if (ticket === latest) {
        grid.showSimilarity(result);
        api.similarityWaited = performance.now() - since;
        api.runs += 1;
        const read = result.token_type_ids.includes(1)
          ? "sentence A, then sentence B" : "sentence A alone";
        say("Ran " + params.name + " on " + result.tokens.length +
          " tokens: " + read + ". " + api.waited.toFixed(0) +
          " ms from your last edit to the last view drawn (the model " +
          "itself: " + result.ms.toFixed(0) + " ms).");
      }
      return result;
    } catch (error) {
      if (ticket === latest) {
        say(error.message, true);
        if (api.shown) {
          views.classList.add("mha-stale");
          staleNote.hidden = false;
        }
      }
      throw error;
    }
  }

  function maskChanged() {
    editedAt = performance.now();
    if (lab.client) {
      rerun().catch(() => undefined);
    }
  }

  // Another layer or reading: the explorer alone draws again.
  function redrawExplorer() {
    if (api.shown) {
      explorer.show(api.shown).catch((error) => say(error.message, true));
    }
  }

  // 4. Wiring: the button, debounced edits.
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
      if (!lab.client) {
        return;
      }
      clearTimeout(timer);
      timer = setTimeout(() => rerun().catch(() => undefined), 250);
    });
  }
  window.mhaLive = api;
})();
