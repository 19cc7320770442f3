/* The live lab's model, off the page's main thread (a module worker).
 *
 * live-client.js sends {type: "load", runtime, wasm, model} once, then
 * {type: "run", id, input_ids, token_type_ids, special, head_mask,
 * mask_dims, rollout}, {type: "embed", id, sentences: [{input_ids,
 * token_type_ids}], head_mask, mask_dims} or {type: "rollout", id, data,
 * dims, head_mask}. head_mask is the (L x h) mask, flat, 1 keeps a head
 * and 0 switches it off. A run answers {id, data, dims, norms, ms, shares,
 * rollout}: data is the (1, L, h, T, T) attention as a Float32Array,
 * handed over without a copy; norms the (1, L, h, T) value norms; shares
 * is the (L x h) share of attention on the special tokens, averaged over
 * the queries, which the page's table shows; rollout, when asked for,
 * the (L, T, T) attention rollout (live-readings.js), else null. An embed
 * answers {id, embeddings}: each sentence alone (one padded batch), its
 * last hidden states averaged over its tokens and normalised, as
 * sentence-transformers pools all-MiniLM-L6-v2. A rollout answers {id,
 * rollout} for attention the page sends back. Errors answer {id, error}.
 *
 * In the worker, the model's run (most of a second at 512 tokens), the
 * sums over all L x h x T x T weights and the rollout's L products of
 * T x T matrices never hold up the page.
 */
import "./live-readings.js"; // globalThis.MhaLiveReadings

let ort = null;
let session = null;

function float32(tensor) {
  const data = tensor.data;
  if (tensor.type !== "float32") {
    return Float32Array.from(data, Number);
  }
  // Our own copy, whose buffer can be handed to the page.
  return data.byteOffset === 0 && data.byteLength === data.buffer.byteLength
    ? data : data.slice();
}

function specialShares(data, L, h, T, special) {
  const shares = new Float32Array(L * h);
  for (let m = 0; m < L * h; m++) {
    let share = 0;
    for (let i = 0; i < T; i++) {
      const row = (m * T + i) * T;
      for (const k of special) {
        share += data[row + k];
      }
    }
    shares[m] = share / T;
  }
  return shares;
}

async function load(message) {
  ort = await import(message.runtime);
  ort.env.wasm.numThreads = 1; // no SharedArrayBuffer needed
  ort.env.wasm.proxy = false;
  ort.env.wasm.wasmBinary = message.wasm;
  session = await ort.InferenceSession.create(message.model, {
    executionProviders: ["wasm"],
  });
}

function maskTensor(message) {
  const [L, h] = message.mask_dims;
  return new ort.Tensor("float32", Float32Array.from(message.head_mask),
    [L, h]);
}

async function run(message) {
  const T = message.input_ids.length;
  const tensor = (values) => new ort.Tensor("int64",
    BigInt64Array.from(values, (v) => BigInt(v)), [1, T]);
  const feeds = {
    input_ids: tensor(message.input_ids),
    attention_mask: tensor(message.input_ids.map(() => 1)),
    token_type_ids: tensor(message.token_type_ids),
    head_mask: maskTensor(message),
  };
  const began = performance.now();
  const outputs = await session.run(feeds);
  const ms = performance.now() - began;
  const data = float32(outputs.attentions);
  const norms = float32(outputs.value_norms);
  const dims = outputs.attentions.dims; // (1, L, h, T, T)
  const [, L, h] = dims;
  const shares = specialShares(data, L, h, T, message.special);
  const rollout = message.rollout
    ? globalThis.MhaLiveReadings.rollout(data, L, h, T, message.head_mask)
    : null;
  return { data, dims, norms, ms, shares, rollout };
}

async function embed(message) {
  const n = message.sentences.length;
  const T = Math.max(...message.sentences.map((s) => s.input_ids.length));
  const flat = (key, fill) => {
    const values = new BigInt64Array(n * T);
    message.sentences.forEach((s, b) => {
      for (let t = 0; t < T; t++) {
        values[b * T + t] = BigInt(t < s.input_ids.length ? fill(s, t) : 0);
      }
    });
    return new ort.Tensor("int64", values, [n, T]);
  };
  const outputs = await session.run({
    input_ids: flat("input_ids", (s, t) => s.input_ids[t]),
    attention_mask: flat("attention_mask", () => 1),
    token_type_ids: flat("token_type_ids", (s, t) => s.token_type_ids[t]),
    head_mask: maskTensor(message),
  });
  const hidden = float32(outputs.last_hidden_state); // (n, T, C)
  const C = outputs.last_hidden_state.dims[2];
  const embeddings = new Float32Array(n * C);
  message.sentences.forEach((s, b) => {
    const mean = embeddings.subarray(b * C, (b + 1) * C);
    const count = s.input_ids.length;
    for (let t = 0; t < count; t++) {
      for (let c = 0; c < C; c++) {
        mean[c] += hidden[(b * T + t) * C + c] / count;
      }
    }
    let norm = 0;
    for (let c = 0; c < C; c++) {
      norm += mean[c] * mean[c];
    }
    norm = Math.max(Math.sqrt(norm), 1e-12);
    for (let c = 0; c < C; c++) {
      mean[c] /= norm;
    }
  });
  return { embeddings };
}

self.onmessage = async (event) => {
  const message = event.data;
  try {
    if (message.type === "load") {
      await load(message);
      self.postMessage({ id: message.id });
    } else if (message.type === "embed") {
      const result = await embed(message);
      self.postMessage({ id: message.id, ...result },
        [result.embeddings.buffer]);
    } else if (message.type === "rollout") {
      const [, L, h, T] = message.dims;
      const rollout = globalThis.MhaLiveReadings.rollout(message.data, L, h,
        T, message.head_mask);
      self.postMessage({ id: message.id, rollout }, [rollout.buffer]);
    } else {
      const result = await run(message);
      const buffers = [result.data.buffer, result.norms.buffer,
        result.shares.buffer];
      if (result.rollout) {
        buffers.push(result.rollout.buffer);
      }
      self.postMessage({ id: message.id, ...result }, buffers);
    }
  } catch (error) {
    self.postMessage({ id: message.id, error: String(error.message || error) });
  }
};
