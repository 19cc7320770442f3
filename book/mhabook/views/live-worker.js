/* The live lab's model, off the page's main thread (a module worker).
 *
 * live.js sends {type: "load", runtime, wasm, model} once, then
 * {type: "run", id, input_ids, token_type_ids, special}. A run answers
 * {id, data, dims, ms, shares}: data is the (1, L, h, T, T) attention as
 * a Float32Array, handed over without a copy; shares is the (L x h) share
 * of attention on the special tokens, averaged over the queries, which
 * the page's table shows. Errors answer {id, error}.
 *
 * In the worker, the model's run (most of a second at 512 tokens) and the
 * sums over all L x h x T x T weights never hold up the page.
 */
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

async function run(message) {
  const T = message.input_ids.length;
  const tensor = (values) => new ort.Tensor("int64",
    BigInt64Array.from(values, (v) => BigInt(v)), [1, T]);
  const feeds = {
    input_ids: tensor(message.input_ids),
    attention_mask: tensor(message.input_ids.map(() => 1)),
    token_type_ids: tensor(message.token_type_ids),
  };
  const began = performance.now();
  const outputs = await session.run(feeds);
  const ms = performance.now() - began;
  const data = float32(outputs.attentions);
  const dims = outputs.attentions.dims; // (1, L, h, T, T)
  const shares = specialShares(data, dims[1], dims[2], T, message.special);
  return { data, dims, ms, shares };
}

self.onmessage = async (event) => {
  const message = event.data;
  try {
    if (message.type === "load") {
      await load(message);
      self.postMessage({ id: message.id });
    } else {
      const result = await run(message);
      self.postMessage({ id: message.id, ...result },
        [result.data.buffer, result.shares.buffer]);
    }
  } catch (error) {
    self.postMessage({ id: message.id, error: String(error.message || error) });
  }
};
