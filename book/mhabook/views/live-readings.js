/* Three ways to read the same attention (Lab 3's explorer), computed on
 * the flat Float32Arrays the model's worker returns. Python's reference,
 * which the browser tests compare them with: value_weighted and rollout in
 * mhabook/experiments/ablation.py.
 *
 *   raw: the softmax weights alpha_ij of each head, (L, h, T, T);
 *   weighted: alpha_ij ||f_h(x_j)||, each weight scaled by the norm of
 *     what key j's value vector adds through the head's slice of W^O
 *     (Kobayashi et al. 2020), (L, h, T, T);
 *   rollout: each layer's weights averaged over its heads that are on,
 *     mixed half and half with the identity for the residual path, rows
 *     renormalised, multiplied from layer 0 up (Abnar and Zuidema 2020),
 *     (L, T, T): row i of layer l is how much each input token reaches
 *     token i at the output of layer l.
 *
 * The page loads this file as a script (window.MhaLiveReadings); the
 * worker (live-worker.js) imports it as a module, and computes the
 * rollout off the page's main thread: L products of T x T matrices.
 */
(function (global) {
  "use strict";

  // A flat array of shape `dims` as nested arrays whose innermost level
  // is a Float32Array view of `data` (no copy): nest(data, [L, h, T, T])
  // gives [l][k][i], query i's row of head k in layer l.
  function nest(data, dims) {
    const last = dims[dims.length - 1];
    let items = [];
    for (let start = 0; start < data.length; start += last) {
      items.push(data.subarray(start, start + last));
    }
    for (let d = dims.length - 2; d > 0; d--) {
      const grouped = [];
      for (let start = 0; start < items.length; start += dims[d]) {
        grouped.push(items.slice(start, start + dims[d]));
      }
      items = grouped;
    }
    return items;
  }

  // alpha_ij ||f(x_j)|| of layer l: its attention (h, T, T) times the
  // value norms (h, T) of each key j; (h, T, T).
  function valueWeightedLayer(attention, norms, l, h, T) {
    const out = new Float32Array(h * T * T);
    for (let k = 0; k < h; k++) {
      const head = (l * h + k) * T;
      for (let i = 0; i < T; i++) {
        const row = (head + i) * T;
        const to = (k * T + i) * T;
        for (let j = 0; j < T; j++) {
          out[to + j] = attention[row + j] * norms[head + j];
        }
      }
    }
    return out;
  }

  // The same for every layer: (L, h, T, T).
  function valueWeighted(attention, norms, L, h, T) {
    const out = new Float32Array(L * h * T * T);
    for (let l = 0; l < L; l++) {
      out.set(valueWeightedLayer(attention, norms, l, h, T), l * h * T * T);
    }
    return out;
  }

  // Each row of `block` (rows of length T) divided by its sum, for
  // drawing: the explorer draws weights between 0 and 1.
  function rowShares(block, T) {
    const out = new Float32Array(block.length);
    for (let row = 0; row < block.length; row += T) {
      let sum = 0;
      for (let j = 0; j < T; j++) {
        sum += block[row + j];
      }
      const scale = sum > 0 ? 1 / sum : 0;
      for (let j = 0; j < T; j++) {
        out[row + j] = block[row + j] * scale;
      }
    }
    return out;
  }

  // Attention rollout, (L, T, T). mask: the flat (L x h) head mask, or
  // undefined for every head on. A layer with every head off mixes in
  // nothing but the identity: its tokens pass through.
  function rollout(attention, L, h, T, mask) {
    const out = new Float32Array(L * T * T);
    let rolled = new Float64Array(T * T);
    for (let i = 0; i < T; i++) {
      rolled[i * T + i] = 1;
    }
    const mixed = new Float64Array(T * T);
    for (let l = 0; l < L; l++) {
      mixed.fill(0);
      const on = [];
      for (let k = 0; k < h; k++) {
        if (!mask || mask[l * h + k] === 1) {
          on.push(k);
        }
      }
      for (const k of on) {
        const head = (l * h + k) * T * T;
        for (let e = 0; e < T * T; e++) {
          mixed[e] += attention[head + e];
        }
      }
      // 0.5 A + 0.5 I, rows renormalised (A: the mean over heads on)
      for (let i = 0; i < T; i++) {
        let sum = 0;
        for (let j = 0; j < T; j++) {
          const e = i * T + j;
          mixed[e] = (on.length ? 0.5 * mixed[e] / on.length : 0) +
            (i === j ? 0.5 : 0);
          sum += mixed[e];
        }
        for (let j = 0; j < T; j++) {
          mixed[i * T + j] /= sum;
        }
      }
      // rolled = mixed @ rolled: each row of the product, i-k-j order
      const next = new Float64Array(T * T);
      for (let i = 0; i < T; i++) {
        for (let k = 0; k < T; k++) {
          const m = mixed[i * T + k];
          if (m === 0) {
            continue;
          }
          for (let j = 0; j < T; j++) {
            next[i * T + j] += m * rolled[k * T + j];
          }
        }
      }
      rolled = next;
      out.set(rolled, l * T * T);
    }
    return out;
  }

  global.MhaLiveReadings = { nest, valueWeighted, valueWeightedLayer,
    rowShares, rollout };
})(globalThis);
