/* The live lab's head grid: a button per head (pressed while the head is
 * on), a button per layer that switches the whole layer, presets, and
 * the similarity of sentences A and B with every head on and now.
 *
 * Presets: every head on; every head off; one layer off; the heads that
 * "Are all heads needed?" ranks least or most important off, as many as
 * a layer has (params.ranking: [layer, head] pairs, least important
 * first, computed when the book is built; no such presets without it).
 */
(function (global) {
  "use strict";
  const MhaLive = global.MhaLive = global.MhaLive || {};

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

  function button(className, text, onClick) {
    const node = element("button", className, text);
    node.type = "button";
    node.addEventListener("click", onClick);
    return node;
  }

  class GridView {
    // lab: the MhaLive.Lab (its mask); onChange(mask): a new mask chosen.
    constructor(lab, params, onChange) {
      this.lab = lab;
      this.params = params;
      this.onChange = onChange;
      this.buttons = []; // [layer][head]
      this.presets = [];
      this.similarity = element("p", "mha-live-similarity");
      this.similarity.setAttribute("aria-live", "polite");
      this.element = element("div", "mha-live-grid");
      this.element.append(element("p", "mha-live-heading",
        "Switch heads off"), this.makePresets(), this.makeGrid(),
      element("p", "mha-live-note", "Rows: layers; columns: heads. A " +
        "pressed button is a head on; press it to switch the head off " +
        "(\u00d7, grey). The row's button switches the whole layer."),
      this.similarity);
      this.showMask();
    }

    allOff() {
      return this.lab.allOn().map((row) => row.fill(0));
    }

    // The mask with `heads` ([layer, head] pairs) off, the others on.
    without(heads) {
      const mask = this.lab.allOn();
      for (const [l, k] of heads) {
        mask[l][k] = 0;
      }
      return mask;
    }

    makePresets() {
      const group = element("div", "mha-live-presets");
      group.setAttribute("role", "group");
      group.setAttribute("aria-label", "Presets");
      const add = (text, mask) => {
        const preset = button("mha-live-preset", text,
          () => this.choose(mask(), preset));
        preset.setAttribute("aria-pressed", "false");
        this.presets.push(preset);
        group.append(preset);
      };
      add("All heads on", () => this.lab.allOn());
      add("All heads off", () => this.allOff());
      const ranking = this.params.ranking;
      const h = this.params.num_heads;
      if (ranking && ranking.length >= h) {
        add("The " + h + " least important off",
          () => this.without(ranking.slice(0, h)));
        add("The " + h + " most important off",
          () => this.without(ranking.slice(-h)));
      }
      this.layerOff = element("select", "mha-live-layer");
      const none = element("option", "", "choose a layer");
      none.value = "";
      this.layerOff.append(none);
      for (let l = 0; l < this.params.num_layers; l++) {
        const option = element("option", "", "layer " + l);
        option.value = String(l);
        this.layerOff.append(option);
      }
      this.layerOff.addEventListener("change", () => {
        if (this.layerOff.value !== "") {
          const mask = this.lab.allOn();
          mask[Number(this.layerOff.value)].fill(0);
          this.choose(mask, this.layerOff);
        }
      });
      const label = element("label", "mha-live-field");
      label.append(element("span", "", "One layer off (the others on)"),
        this.layerOff);
      group.append(label);
      if (ranking && ranking.length >= h) {
        const note = element("p", "mha-live-note");
        const link = element("a", "", "Are all heads needed?");
        link.href = this.params.ranking_page;
        note.append("Importance as ", link, " ranks it: how far " +
          "removing a head alone moves the model's sentence embeddings, " +
          "over many sentences.");
        const box = element("div");
        box.append(group, note);
        return box;
      }
      return group;
    }

    makeGrid() {
      const table = element("table", "mha-live-grid-table");
      table.setAttribute("aria-label", "Head grid: layers by heads");
      const header = element("tr");
      header.append(element("th", "", "layer"));
      for (let k = 0; k < this.params.num_heads; k++) {
        const th = element("th", "", String(k));
        th.scope = "col";
        header.append(th);
      }
      table.append(header);
      for (let l = 0; l < this.params.num_layers; l++) {
        const row = element("tr");
        const th = element("th");
        th.scope = "row";
        const whole = button("mha-live-layer-switch", String(l), () => {
          const mask = this.lab.mask.map((r) => r.slice());
          mask[l].fill(mask[l].some((v) => v === 1) ? 0 : 1);
          this.choose(mask);
        });
        whole.setAttribute("aria-label", "Switch layer " + l + " off or on");
        th.append(whole);
        row.append(th);
        this.buttons[l] = [];
        for (let k = 0; k < this.params.num_heads; k++) {
          const cell = element("td");
          const head = button("mha-live-head", "", () => {
            const mask = this.lab.mask.map((r) => r.slice());
            mask[l][k] = 1 - mask[l][k];
            this.choose(mask);
          });
          head.setAttribute("aria-label", "Layer " + l + ", head " + k);
          head.style.setProperty("--mha-colour",
            this.params.colours[k % this.params.colours.length]);
          this.buttons[l].push(head);
          cell.append(head);
          row.append(cell);
        }
        table.append(row);
      }
      const wrap = element("div", "mha-live-grid-scroll");
      wrap.append(table);
      return wrap;
    }

    // A mask picked in the grid; `from`: the preset that gave it.
    choose(mask, from) {
      this.lab.mask = mask;
      this.showMask(from);
      this.onChange(mask);
    }

    // The grid as lab.mask has it; `from`: the preset pressed, if any.
    showMask(from) {
      this.buttons.forEach((row, l) => row.forEach((head, k) => {
        const on = this.lab.mask[l][k] === 1;
        head.setAttribute("aria-pressed", String(on));
        head.textContent = on ? String(k) : "\u00d7";
        head.classList.toggle("mha-live-off", !on);
      }));
      for (const preset of this.presets) {
        preset.setAttribute("aria-pressed", String(preset === from));
      }
      if (from !== this.layerOff) {
        this.layerOff.value = "";
      }
    }

    // pending: the views of `result` are drawn, its similarity not yet.
    showSimilarity(result, pending) {
      const off = result.headMask.flat().filter((v) => v === 0).length;
      const total = this.params.num_layers * this.params.num_heads;
      const state = off === 0 ? "Every head is on. "
        : off === total ? "Every head is off: each layer adds only its " +
          "output projection's bias and its feed-forward part, and the " +
          "similarity is still defined. "
          : off + " of " + total + " heads are off. ";
      if (pending && result.token_type_ids.includes(1)) {
        this.similarity.textContent = state + "Similarity of A and B: " +
          "running each sentence alone\u2026";
        return;
      }
      if (result.similarity === null) {
        this.similarity.textContent = state + "Type sentence B to see the " +
          "similarity of A and B (each sentence run alone, its tokens " +
          "averaged, then the cosine).";
        return;
      }
      this.similarity.textContent = state + "Similarity of A and B (the " +
        "cosine of their sentence embeddings, each sentence run alone): " +
        result.similarityAll.toFixed(3) + " with every head on, " +
        result.similarity.toFixed(3) + " now.";
    }
  }

  MhaLive.GridView = GridView;
})(window);
