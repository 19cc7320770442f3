/* The live lab's state: the head mask, the reading the explorer shows, and
 * the runs of the model with their results.
 *
 *   const lab = new MhaLive.Lab(params);
 *   lab.mask        // (L x h) nested arrays, 1 keep, 0 off
 *   lab.reading     // "raw", "weighted" or "rollout" (live-readings.js)
 *   lab.checkMask(options.headMask)  // a copy, or an Error naming the shape
 *   const result = await lab.attend(textA, textB, mask, wantRollout,
 *     skippable);   // -> a Result of the pair's run, one run at a time
 *   await result.complete   // -> the same Result, its similarities set
 *
 * attend resolves as soon as the pair has run, so that the page draws its
 * views while the worker encodes sentences A and B alone for the
 * similarity (the main thread and the worker each on a core);
 * result.complete resolves once similarity and similarityAll are set.
 * skippable: leave them null when a newer attend has come in meanwhile
 * (nobody will see them; the next run starts sooner).
 *
 * A Result's own fields are small: tokens, token_type_ids, similarity,
 * similarityAll, headMask and ms. The weights are read through getters:
 * attention (L, h, T, T) and valueNorms (L, h, T), nested arrays whose
 * rows are Float32Array views of the worker's buffers (no copy:
 * Array.from(row) gives a plain array), and the methods valueWeighted()
 * (L, h, T, T) and rollout() (L, T, T) compute the other two readings on
 * first call. So a result serialised whole (JSON, a structured clone, a
 * test harness handing it back) carries the small fields alone, not a
 * million numbers at 128 tokens, each walked on the page's main thread.
 */
(function (global) {
  "use strict";
  const MhaLive = global.MhaLive = global.MhaLive || {};
  const readings = global.MhaLiveReadings;

  class Result {
    constructor(encoded, reply, mask) {
      const [, L, h, T] = reply.dims; // (1, L, h, T, T)
      this.tokens = encoded.tokens;
      this.token_type_ids = encoded.token_type_ids;
      this.similarity = null; // set by Lab.attend's second step
      this.similarityAll = null;
      this.headMask = mask.map((row) => row.slice());
      this.ms = reply.ms;
      // The flat arrays the views read, kept out of the own fields.
      Object.defineProperty(this, "flat", { value: {
        data: reply.data, norms: reply.norms, dims: reply.dims,
        shares: reply.shares, rollout: reply.rollout || null,
        weighted: null, nested: {}, L: L, h: h, T: T } });
    }

    // (L, h, T, T): the attention weights, nested once, when first read.
    get attention() {
      const f = this.flat;
      f.nested.attention = f.nested.attention ||
        readings.nest(f.data, [f.L, f.h, f.T, f.T]);
      return f.nested.attention;
    }

    // (L, h, T): each head's ||f_h(x_j)||.
    get valueNorms() {
      const f = this.flat;
      f.nested.valueNorms = f.nested.valueNorms ||
        readings.nest(f.norms, [f.L, f.h, f.T]);
      return f.nested.valueNorms;
    }

    // (L, h, T, T): alpha_ij ||f_h(x_j)||.
    valueWeighted() {
      const f = this.flat;
      if (!f.weighted) {
        f.weighted = readings.valueWeighted(f.data, f.norms, f.L, f.h, f.T);
      }
      return readings.nest(f.weighted, [f.L, f.h, f.T, f.T]);
    }

    // (L, T, T): the rollout under this result's head mask.
    rollout() {
      const f = this.flat;
      if (!f.rollout) {
        f.rollout = readings.rollout(f.data, f.L, f.h, f.T,
          this.headMask.flat());
      }
      return readings.nest(f.rollout, [f.L, f.T, f.T]);
    }
  }

  class Lab {
    constructor(params) {
      this.params = params;
      this.mask = this.allOn();
      this.reading = "raw";
      this.client = null; // a MhaLive.Client once the model is loaded
      this.tokenizer = null;
      this.queue = Promise.resolve();
      this.remembered = new Map(); // JSON [A, B] -> with every head on
      this.serial = 0; // attend's calls
    }

    allOn() {
      return Array.from({ length: this.params.num_layers },
        () => new Array(this.params.num_heads).fill(1));
    }

    // options.headMask, checked: L arrays of h numbers, each 0 or 1.
    checkMask(mask) {
      const L = this.params.num_layers;
      const h = this.params.num_heads;
      const shape = "a head mask must be " + L + " arrays (layers) of " +
        h + " numbers (heads), shape (" + L + ", " + h + "), each 1 " +
        "(keep) or 0 (off)";
      if (mask === undefined || mask === null) {
        return this.allOn();
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

    encode(textA, textB) {
      if (String(textA).trim() === "") {
        throw new Error("Sentence A is empty: type a sentence to run the " +
          "model on.");
      }
      const encoded = this.tokenizer.encode(textA,
        String(textB || "").trim() ? textB : undefined);
      const count = encoded.tokens.length;
      if (count > this.params.max_tokens) {
        throw new Error("The text is " + count + " tokens long, but the " +
          "model reads at most " + this.params.max_tokens + " (its " +
          "position table): shorten the sentences.");
      }
      return encoded;
    }

    // The cosine of A's and B's embeddings, each sentence alone, under
    // `mask`; null when B is empty.
    async similarity(textA, textB, mask) {
      if (String(textB || "").trim() === "") {
        return null;
      }
      const e = await this.client.embed([textA, textB].map((text) =>
        this.tokenizer.encode(text)), mask);
      const C = e.length / 2;
      let dot = 0;
      for (let c = 0; c < C; c++) {
        dot += e[c] * e[C + c];
      }
      return dot;
    }

    // One run: the pair's attention and value norms under `mask`; then,
    // queued behind it, the similarity now and with every head on
    // (remembered per pair), which result.complete waits for.
    attend(textA, textB, mask, wantRollout, skippable) {
      const serial = ++this.serial;
      // One run at a time: a WebAssembly session is not re-entrant.
      const job = this.queue.then(async () => {
        const encoded = this.encode(textA, textB);
        const reply = await this.client.run(encoded, mask, wantRollout);
        return new Result(encoded, reply, mask);
      });
      const complete = job.then(async (result) => {
        if (!(skippable && serial !== this.serial)) {
          await this.similarities(result, textA, textB, mask);
        }
        return result;
      });
      this.queue = complete.catch(() => undefined);
      return job.then((result) => {
        Object.defineProperty(result, "complete", { value: complete });
        return result;
      });
    }

    async similarities(result, textA, textB, mask) {
      const key = JSON.stringify([textA, textB || ""]);
      const everyHead = mask.every((row) => row.every((v) => v === 1));
      const now = await this.similarity(textA, textB, mask);
      if (everyHead) {
        this.remembered.set(key, now);
      } else if (!this.remembered.has(key)) {
        this.remembered.set(key,
          await this.similarity(textA, textB, this.allOn()));
      }
      while (this.remembered.size > 20) {
        this.remembered.delete(this.remembered.keys().next().value);
      }
      result.similarity = now;
      result.similarityAll = this.remembered.get(key);
    }

    // The result's rollout, computed in the worker if it is not yet.
    async withRollout(result) {
      const f = result.flat;
      if (!f.rollout) {
        const job = this.queue.then(() => this.client.rollout(f.data,
          f.dims, result.headMask));
        this.queue = job.catch(() => undefined);
        f.rollout = await job;
      }
      return result;
    }
  }

  MhaLive.Lab = Lab;
  MhaLive.Result = Result;
})(window);
