/* The live lab's worker client: the downloads the button promised, and
 * the model's worker (live-worker.js), which runs one request at a time.
 *
 *   const client = new MhaLive.Client(params, base, onProgress);
 *   await client.start();    // -> {vocab, explorer, headView}: the texts
 *                            //    of the vocabulary and the two views'
 *                            //    templates
 *   await client.run(encoded, mask, wantRollout)
 *                            // -> {data, dims, norms, shares, rollout, ms}
 *   await client.embed([encodedA, encodedB], mask)  // -> Float32Array
 *   await client.rollout(data, dims, mask)          // -> Float32Array
 *
 * mask is the (L x h) head mask as nested arrays. Every failure rejects
 * with an Error whose message says what to do.
 */
(function (global) {
  "use strict";
  const MhaLive = global.MhaLive = global.MhaLive || {};

  const SERVE_HINT =
    "Serve the built site over http instead: in its folder (_build/html), " +
    "run `python -m http.server`, then open " +
    "http://localhost:8000/book/labs.html.";

  class Client {
    constructor(params, base, onProgress) {
      this.params = params;
      this.base = base;
      this.onProgress = onProgress;
      this.worker = null;
      this.waiting = new Map(); // message id -> {resolve, reject}
      this.messages = 0;
      this.received = 0;
    }

    // One file, as text or bytes; bytes count towards the progress bar.
    async download(name, asText) {
      let response;
      try {
        response = await fetch(this.base + name);
      } catch (error) {
        throw new Error("Could not download " + name + " (" +
          error.message + "). " + SERVE_HINT);
      }
      if (!response.ok) {
        throw new Error("Could not download " + name + " (HTTP " +
          response.status + "). " + SERVE_HINT);
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
        this.received += value.length;
        this.onProgress(Math.min(1,
          this.received / this.params.download_bytes));
      }
      return new Uint8Array(await new Blob(chunks).arrayBuffer());
    }

    async start() {
      if (typeof WebAssembly !== "object") {
        throw new Error("This browser cannot run WebAssembly, which the " +
          "live model needs. Open the page in a current Firefox, Chrome, " +
          "Edge or Safari, or run the notebook.");
      }
      if (location.protocol === "file:") {
        throw new Error("This page was opened as a file (file://), from " +
          "which browsers do not let it load the model. " + SERVE_HINT);
      }
      const params = this.params;
      this.received = 0;
      const [vocab, explorer, headView, wasm, model] = await Promise.all([
        this.download(params.vocab, true),
        this.download("explorer.js", true),
        this.download("head_view.js", true),
        this.download(params.wasm),
        this.download(params.model),
      ]);
      this.worker = new Worker(this.base + "live-worker.js",
        { type: "module" });
      this.worker.onmessage = (event) => this.answer(event.data);
      this.worker.onerror = (event) => {
        event.preventDefault();
        for (const pending of this.waiting.values()) {
          pending.reject(new Error("The model's worker stopped (" +
            (event.message || "no reason given") + "). " + SERVE_HINT));
        }
        this.waiting.clear();
      };
      try {
        await this.ask({ type: "load", runtime: this.base + params.runtime,
          wasm: wasm, model: model }, [wasm.buffer, model.buffer]);
      } catch (error) {
        throw new Error("Could not start onnxruntime-web (" +
          error.message + "). " + SERVE_HINT);
      }
      return { vocab, explorer, headView };
    }

    answer(reply) {
      const pending = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (reply.error) {
        pending.reject(new Error(reply.error));
      } else {
        pending.resolve(reply);
      }
    }

    ask(message, transfer) {
      message.id = ++this.messages;
      return new Promise((resolve, reject) => {
        this.waiting.set(message.id, { resolve, reject });
        this.worker.postMessage(message, transfer || []);
      });
    }

    static maskFields(mask) {
      return { head_mask: mask.flat(), mask_dims: [mask.length,
        mask[0].length] };
    }

    // The model on one encoded text (a sentence or a pair).
    run(encoded, mask, wantRollout) {
      const special = [];
      encoded.tokens.forEach((t, k) => {
        if (t === "[CLS]" || t === "[SEP]") {
          special.push(k);
        }
      });
      return this.ask({
        type: "run",
        input_ids: encoded.input_ids,
        token_type_ids: encoded.token_type_ids,
        special: special,
        rollout: Boolean(wantRollout),
        ...Client.maskFields(mask),
      });
    }

    // Sentence embeddings (n x C, normalised) of encoded sentences, each
    // run alone.
    async embed(sentences, mask) {
      const reply = await this.ask({
        type: "embed",
        sentences: sentences.map((s) => ({ input_ids: s.input_ids,
          token_type_ids: s.token_type_ids })),
        ...Client.maskFields(mask),
      });
      return reply.embeddings;
    }

    // The rollout of attention `data` (1, L, h, T, T), sent as a copy.
    async rollout(data, dims, mask) {
      const copy = data.slice();
      const reply = await this.ask({ type: "rollout", data: copy, dims: dims,
        ...Client.maskFields(mask) }, [copy.buffer]);
      return reply.rollout;
    }
  }

  MhaLive.Client = Client;
  MhaLive.SERVE_HINT = SERVE_HINT;
})(window);
