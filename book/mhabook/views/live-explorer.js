/* The live lab's head explorer: one layer's heads, read one of three ways
 * (live-readings.js), drawn by the explorer's own template (explorer.js,
 * the file Python fills for the other pages).
 *
 * The template is compiled once, into a function of its parameters
 * (its placeholder, EXPLORER_PARAMS, becomes the argument): each run
 * calls it on a fresh element, with no script added to the page and no
 * text pasted into the template.
 *
 * A head switched off keeps its weights and its colour in the view (so
 * the explorer's marks for heads that share a colour stay put), is named
 * "(off)", and its toggle and arcs get the class mha-live-off: live.css
 * draws them dotted and faint, with a hatched swatch, apart from the
 * palette's grey. The explorer draws its arcs anew at each query: they
 * are marked again as they come.
 *
 * explorer.js draws once, then again each time its stage is resized (a
 * ResizeObserver, whose first report comes right after it is drawn, and
 * another when a drawing is taken off the page): show() keeps each
 * drawing's observer, passes on only reports of a new width, and
 * disconnects it when the drawing is replaced, so each run draws once.
 *
 * A run that leaves what the explorer shows as it was (a head switched
 * off in a later layer does not change this layer's weights) keeps the
 * drawing: show() compares tokens, names and weights, and draws only on a
 * difference.
 */
(function (global) {
  "use strict";
  const MhaLive = global.MhaLive = global.MhaLive || {};
  const readings = global.MhaLiveReadings;

  // What each reading shows and what it assumes, in one line each.
  const READINGS = {
    raw: {
      label: "attention weights",
      caption: "Shows each head's softmax weights: where its query " +
        "looks. Assumes that a weight says how much of a token the query " +
        "takes in, whatever the size of that token's value vector.",
    },
    weighted: {
      label: "weighted by value norms",
      caption: "Shows each weight times the length of what that " +
        "token's value vector adds through the head, \u2016\u03b1 f(x)" +
        "\u2016 (Kobayashi et al. 2020), each row scaled to sum to 1: " +
        "weight parked on tokens with small values (often [CLS] and " +
        "[SEP]) shrinks. Leaves out the residual path.",
    },
    rollout: {
      label: "rolled out across layers",
      caption: "Shows the heads that are on, averaged, mixed half and " +
        "half with the identity for the residual path, and multiplied " +
        "from layer 0 up to this layer (Abnar and Zuidema 2020): how " +
        "much each input token reaches this one. Assumes every head " +
        "counts the same; leaves out the value vectors.",
    },
  };

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

  // Mark the toggles and arcs of the heads switched off (off[k]), now and
  // each time the explorer draws its arcs again.
  function markOff(holder, off) {
    holder.querySelectorAll(".mha-toggle").forEach((toggle, k) => {
      toggle.classList.toggle("mha-live-off", off[k]);
    });
    const svg = holder.querySelector("svg");
    const mark = () => {
      for (const arc of svg.querySelectorAll("path.mha-arc")) {
        arc.classList.toggle("mha-live-off", off[Number(arc.dataset.head)]);
      }
    };
    mark();
    new MutationObserver(mark).observe(svg, { childList: true });
  }

  // Whether two explorer values draw the same: tokens, title, each
  // head's name, colour and weights (rows of numbers).
  function sameDrawing(a, b) {
    const same = (x, y) => x.length === y.length &&
      x.every((v, i) => v === y[i]);
    return Boolean(a && b) && a.title === b.title &&
      same(a.tokens, b.tokens) && a.heads.length === b.heads.length &&
      a.heads.every((head, k) => {
        const other = b.heads[k];
        return head.name === other.name && head.colour === other.colour &&
          head.weights.length === other.weights.length &&
          head.weights.every((row, i) => same(row, other.weights[i]));
      });
  }

  // Call draw() with ResizeObserver standing for one that reports only
  // a change of the stage's width; returns that observer, if one was made.
  function drawnOnce(draw) {
    const Native = global.ResizeObserver;
    if (typeof Native !== "function") {
      draw();
      return null;
    }
    let made = null;
    global.ResizeObserver = class extends Native {
      constructor(callback) {
        const widths = new Map();
        super((entries, self) => {
          const resized = entries.filter((entry) => {
            const width = entry.target.clientWidth;
            const changed = widths.get(entry.target) !== width;
            widths.set(entry.target, width);
            return changed && entry.target.isConnected;
          });
          if (resized.length) {
            callback(resized, self);
          }
        });
        this.widths = widths;
        made = this;
      }

      observe(target, options) {
        this.widths.set(target, target.clientWidth); // as drawn
        super.observe(target, options);
      }
    };
    try {
      draw();
    } finally {
      global.ResizeObserver = Native;
    }
    return made;
  }

  class ExplorerView {
    // lab: the MhaLive.Lab (its reading and its rollouts); onChange:
    // called when the reader picks another layer or reading.
    constructor(lab, params, onChange) {
      this.lab = lab;
      this.params = params;
      this.draw = null;
      this.serial = 0;
      this.shown = null; // the result drawn
      this.drawn = null; // what it was drawn from
      this.observer = null; // its ResizeObserver (drawnOnce)
      this.layerMenu = element("select", "mha-live-layer");
      for (let l = 0; l < params.num_layers; l++) {
        const option = element("option", "", String(l));
        option.value = String(l);
        this.layerMenu.append(option);
      }
      this.layerMenu.value = String(params.layer);
      this.layerMenu.addEventListener("change", onChange);
      const heading = element("label", "mha-live-heading");
      heading.append("Head explorer of layer ", this.layerMenu);

      // The reading: a group of radio buttons, and its caption.
      const switcher = element("fieldset", "mha-live-readings");
      switcher.append(element("legend", "", "Read the attention as"));
      this.radios = {};
      for (const [name, reading] of Object.entries(READINGS)) {
        const radio = element("input");
        radio.type = "radio";
        radio.name = "mha-live-reading";
        radio.value = name;
        radio.checked = name === lab.reading;
        radio.addEventListener("change", () => {
          lab.reading = name;
          this.showCaption();
          onChange();
        });
        const label = element("label", "mha-live-reading");
        label.append(radio, " " + reading.label);
        switcher.append(label);
        this.radios[name] = radio;
      }
      this.caption = element("p", "mha-live-reading-caption");
      this.caption.setAttribute("aria-live", "polite");
      this.slot = element("div", "mha-live-explorer");
      this.element = element("div", "mha-live-explorer-view");
      this.element.append(heading, switcher, this.caption, this.slot);
      this.showCaption();
    }

    // The explorer's template, once: a function of EXPLORER_PARAMS.
    setTemplate(source) {
      this.draw = new Function("EXPLORER_PARAMS", source);
    }

    get layer() {
      return Number(this.layerMenu.value);
    }

    showCaption() {
      this.caption.textContent = READINGS[this.lab.reading].caption;
    }

    // The heads of this layer as the reading reads them.
    heads(result) {
      const { h, T } = result.flat;
      const l = this.layer;
      const colours = this.params.colours;
      const reading = this.lab.reading;
      if (reading === "rollout") {
        const rolled = result.flat.rollout.subarray(l * T * T,
          (l + 1) * T * T);
        return [{ name: "layers 0\u2013" + l + " rolled out",
          colour: colours[0], weights: readings.nest(rolled, [T, T]) }];
      }
      const weights = reading === "weighted"
        ? readings.nest(readings.rowShares(readings.valueWeightedLayer(
          result.flat.data, result.flat.norms, l, h, T), T), [h, T, T])
        : result.attention[l];
      return weights.map((rows, k) => ({
        name: "head " + k + (result.headMask[l][k] === 1 ? "" : " (off)"),
        colour: colours[k % colours.length],
        weights: rows,
      }));
    }

    async show(result) {
      if (this.lab.reading === "rollout") {
        await this.lab.withRollout(result);
      }
      const pressed = this.slot.querySelector(
        ".mha-token[aria-pressed=true]");
      // At first, the word the page asks for (params.query), or the first
      // word; then the token the reader chose.
      const opening = this.params.query
        ? result.tokens.indexOf(this.params.query) : -1;
      const query = Math.min(pressed ? Number(pressed.dataset.index)
        : opening >= 0 ? opening : 1, result.tokens.length - 1);
      const value = {
        tokens: result.tokens,
        heads: this.heads(result),
        query: query,
        title: "Layer " + this.layer + " of " + this.params.name +
          ", live: " + READINGS[this.lab.reading].label,
      };
      if (pressed && sameDrawing(value, this.drawn)) {
        this.shown = result; // nothing it shows has changed
        return;
      }
      const holder = element("div", "mha-explorer-root");
      holder.id = "mha-live-explorer-" + (++this.serial);
      this.slot.replaceChildren(holder);
      value.id = holder.id;
      if (this.observer) {
        this.observer.disconnect();
      }
      this.observer = drawnOnce(() => this.draw(value));
      markOff(holder, value.heads.map((head) => head.name.endsWith("(off)")));
      this.drawn = value;
      this.shown = result;
    }
  }

  ExplorerView.READINGS = READINGS;
  MhaLive.ExplorerView = ExplorerView;
})(window);
