/* The live lab's BertViz head view: BertViz's own template (head_view.js,
 * as book/_ext/live_lab.py copies it) in the markup BertViz's Python
 * writes (live.py puts it in the page as <template> elements).
 *
 * The template is compiled once into a function of its parameters (its
 * placeholder, PYTHON_PARAMS, becomes the argument); each drawing calls
 * it on a fresh copy of the markup, with no script added to the page.
 *
 * The view draws one SVG line per head and pair of tokens: it is drawn
 * only while on screen, after the other views, with as many heads as fit
 * LINES (the others one pick away in the menu of heads), and not at all
 * when one head would not fit. When it scrolls into view it catches up
 * with the last run. A head switched off gets dotted lines in live.css's
 * grey for heads that are off.
 */
(function (global) {
  "use strict";
  const MhaLive = global.MhaLive = global.MhaLive || {};
  // What BertViz may draw at once: more lines hold up the page for more
  // than about 200 ms on a slow machine.
  const LINES = 2500;

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

  // After the next paint.
  function nextFrame() {
    return new Promise((resolve) =>
      requestAnimationFrame(() => setTimeout(resolve, 0)));
  }

  // The head view's heads, in groups that fit LINES.
  function headGroups(T, h) {
    const fit = Math.min(h, Math.floor(LINES / (T * T)));
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

  class BertvizView {
    // markup: {single, pair}, BertViz's markup for one sentence and for a
    // pair (<template> elements); layerOf(): the layer to open on.
    constructor(markup, layerOf) {
      this.markup = markup;
      this.layerOf = layerOf;
      this.draw = null;
      this.serial = 0;
      this.visible = false;
      this.last = null; // the last result shown by the lab
      this.drawnResult = null; // the result the view shows
      this.waiting = null;
      this.slot = element("div", "mha-live-bertviz");
      this.slot.append(element("p", "mha-live-note",
        "The head view is drawn when it scrolls into view."));
      this.menu = element("select", "mha-live-layer");
      this.menuField = element("label", "mha-live-heading");
      this.menuField.append("Heads drawn in the head view: ", this.menu);
      this.menuField.hidden = true;
      this.menu.addEventListener("change", () => {
        if (this.last && this.visible) {
          this.drawnResult = this.last;
          this.render(this.last);
        } else {
          this.drawnResult = null;
        }
      });
      this.element = element("div", "mha-live-bertviz-view");
      this.element.append(element("p", "mha-live-heading",
        "BertViz head view (every layer: use its Layer menu)"),
      this.menuField, this.slot);
      new IntersectionObserver((entries) => {
        this.visible = entries[entries.length - 1].isIntersecting;
        this.update();
      }).observe(this.slot);
    }

    // BertViz's template, once. Its own require.config names our copies
    // of d3 and jQuery by a placeholder; they are configured here instead.
    setTemplate(source, bundled) {
      if (typeof global.requirejs !== "function") {
        return;
      }
      global.requirejs.config({ paths: { d3: bundled + "/d3.min",
        jquery: bundled + "/jquery.min" } });
      const template = new Function("PYTHON_PARAMS", "require", source);
      const ignoreConfig = { config: () => undefined };
      this.draw = (params) => template(params, ignoreConfig);
    }

    // Each update resolves once the view is drawn, or left as it is.
    show(result) {
      this.last = result;
      return this.update();
    }

    update() {
      if (!this.visible || !this.last || this.last === this.drawnResult) {
        return Promise.resolve();
      }
      if (!this.waiting) {
        this.waiting = nextFrame().then(async () => {
          this.waiting = null;
          if (this.visible && this.last !== this.drawnResult) {
            this.drawnResult = this.last;
            this.render(this.last);
            await this.drawn();
          }
        });
      }
      return this.waiting;
    }

    // Until BertViz, which draws once require.js has its libraries, has
    // drawn (or gave up: at most 5 s), then painted.
    async drawn() {
      const until = performance.now() + 5000;
      while (this.slot.querySelector("#vis") &&
        !this.slot.querySelector("#vis svg") && performance.now() < until) {
        await nextFrame();
      }
      await nextFrame();
    }

    showMenu(groups) {
      const labels = groups.map((heads) => heads.length === 1
        ? "head " + heads[0]
        : "heads " + heads[0] + "\u2013" + heads[heads.length - 1]);
      const current = Array.from(this.menu.options).map((o) => o.textContent);
      if (labels.join() !== current.join()) {
        const chosen = Math.min(Number(this.menu.value) || 0,
          labels.length - 1);
        this.menu.replaceChildren(...labels.map((label, i) => {
          const option = element("option", "", label);
          option.value = String(i);
          return option;
        }));
        this.menu.value = String(Math.max(0, chosen));
      }
      this.menuField.hidden = groups.length < 2;
    }

    render(result) {
      const tokens = result.tokens;
      const T = tokens.length;
      const h = result.attention[0].length;
      const groups = headGroups(T, h);
      this.showMenu(groups);
      if (groups.length === 0) {
        this.slot.replaceChildren(element("p", "mha-live-note",
          "At " + T + " tokens, one head of the head view would draw " +
          T * T + " lines, more than this page draws without holding up " +
          "your typing. The head explorer and the table show every head; " +
          "shorten the text to about " + Math.floor(Math.sqrt(LINES)) +
          " tokens to see the head view."));
        return;
      }
      if (!this.draw) {
        this.slot.replaceChildren(element("p", "",
          "BertViz needs require.js, which this page does not load."));
        return;
      }
      const heads = groups[Number(this.menu.value) || 0];
      const bStart = result.token_type_ids.indexOf(1);
      const all = result.attention.map((layer) => heads.map((k) =>
        layer[k].map((row) => Array.from(row))));
      const slice = (rows, cols) => all.map((layer) => layer.map((head) =>
        head.slice(rows[0], rows[1]).map((row) =>
          row.slice(cols[0], cols[1]))));
      const filters = [{ name: "All", attn: all, left_text: tokens,
        right_text: tokens }];
      if (bStart > 0) {
        const a = [0, bStart];
        const b = [bStart, T];
        for (const [name, rows, cols] of [
          ["Sentence A -> Sentence A", a, a],
          ["Sentence B -> Sentence B", b, b],
          ["Sentence A -> Sentence B", a, b],
          ["Sentence B -> Sentence A", b, a]]) {
          filters.push({ name: name, attn: slice(rows, cols),
            left_text: tokens.slice(rows[0], rows[1]),
            right_text: tokens.slice(cols[0], cols[1]) });
        }
      }
      // BertViz's markup, from its Python, for this many filters.
      const markup = this.markup[filters.length > 1 ? "pair" : "single"];
      const view = markup.content.firstElementChild.cloneNode(true);
      view.id = "mha-live-bertviz-" + (++this.serial);
      view.classList.add("mha-live-headview");
      this.slot.replaceChildren(view);
      const mark = () => markOff(view, heads, result.headMask);
      new MutationObserver(mark).observe(view.querySelector("#vis"),
        { childList: true });
      this.draw({
        attention: filters,
        default_filter: "0",
        root_div_id: view.id,
        layer: this.layerOf(),
        heads: null, // every head of the group
        head_numbers: heads, // their numbers and colours, for the labels
        include_layers: all.map((_, l) => l),
      });
    }
  }

  // Dotted lines and a grey square for the heads switched off in the
  // layer the view shows (BertViz draws that layer anew at each change).
  function markOff(view, heads, mask) {
    const layer = Number(view.querySelector("#layer").value);
    const off = (i) => mask[layer] && mask[layer][heads[i]] === 0;
    view.querySelectorAll("#attention > g.headAttention").forEach((g) => {
      g.classList.toggle("mha-live-off",
        Boolean(off(Number(g.getAttribute("head-index")))));
    });
    const box = view.querySelector("#vis svg > g:last-of-type");
    if (box) {
      box.querySelectorAll(":scope > rect").forEach((square, i) => {
        square.classList.toggle("mha-live-off", Boolean(off(i)));
      });
    }
  }

  BertvizView.LINES = LINES;
  MhaLive.BertvizView = BertvizView;
})(window);
