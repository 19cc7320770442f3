/* Head explorer: arcs from a query token to the tokens it attends to, one
 * colour per head. Self-contained (no libraries), so it works in a static
 * page with no kernel. Python (mhabook/explorer.py) replaces
 * EXPLORER_PARAMS with JSON:
 *   {id, tokens: [str], heads: [{name, colour, weights: [[T x T]]}],
 *    query: int, title: str}
 * Every text from the data goes into the page through textContent.
 */
(function () {
  "use strict";
  const params = EXPLORER_PARAMS;
  const root = document.getElementById(params.id);
  if (!root || root.dataset.ready) {
    return;
  }
  root.dataset.ready = "true";
  root.textContent = "";

  const SVG = "http://www.w3.org/2000/svg";
  const HEIGHT = 140;  // px of room for the arcs above the tokens
  const tokens = params.tokens;
  const heads = params.heads;
  const state = {
    query: params.query,
    shown: heads.map(() => true),
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

  function percent(weight) {
    return Math.round(weight * 100) + "%";
  }

  // Head controls: a toggle and an "isolate" button per head.
  const controls = element("div", "mha-heads");
  controls.setAttribute("role", "group");
  controls.setAttribute("aria-label", "Heads");
  const toggles = heads.map((head, h) => {
    const group = element("span", "mha-head");
    const toggle = element("button", "mha-toggle");
    toggle.type = "button";
    toggle.dataset.head = String(h);
    toggle.style.setProperty("--mha-colour", head.colour);
    const swatch = element("span", "mha-swatch");
    swatch.setAttribute("aria-hidden", "true");
    toggle.append(swatch, document.createTextNode(head.name));
    // Accessible names start with the visible text (WCAG 2.5.3).
    toggle.setAttribute("aria-label", head.name + " head");
    toggle.addEventListener("click", () => {
      state.shown[h] = !state.shown[h];
      draw();
    });
    const isolate = element("button", "mha-isolate", "isolate");
    isolate.type = "button";
    isolate.dataset.head = String(h);
    isolate.setAttribute("aria-label", "isolate " + head.name + " head");
    isolate.addEventListener("click", () => {
      state.shown = heads.map((_, other) => other === h);
      draw();
    });
    group.append(toggle, isolate);
    controls.append(group);
    return toggle;
  });
  const all = element("button", "mha-all", "show all");
  all.type = "button";
  all.setAttribute("aria-label", "show all heads");
  all.addEventListener("click", () => {
    state.shown = heads.map(() => true);
    draw();
  });
  controls.append(all);

  // The arcs live in an SVG above the row of tokens.
  const stage = element("div", "mha-stage");
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "mha-arcs");
  svg.setAttribute("aria-hidden", "true");
  const row = element("div", "mha-tokens");
  row.setAttribute("role", "toolbar");
  row.setAttribute("aria-label",
    "Tokens: choose the query token with the arrow keys, Enter or a click");
  const buttons = tokens.map((token, i) => {
    const button = element("button", "mha-token", token);
    button.type = "button";
    button.dataset.index = String(i);
    button.addEventListener("click", () => choose(i));
    button.addEventListener("keydown", (event) => {
      const moves = {
        ArrowRight: i + 1, ArrowDown: i + 1,
        ArrowLeft: i - 1, ArrowUp: i - 1,
        Home: 0, End: tokens.length - 1,
      };
      if (event.key in moves) {
        event.preventDefault();
        const next = Math.max(0, Math.min(tokens.length - 1, moves[event.key]));
        choose(next);
        buttons[next].focus();
      }
    });
    row.append(button);
    return button;
  });
  stage.append(svg, row);

  const caption = element("figcaption", "mha-caption");
  caption.setAttribute("aria-live", "polite");
  const figure = element("figure", "mha-explorer");
  figure.setAttribute("aria-label", params.title);
  figure.append(controls, stage, caption);
  root.append(figure);

  function choose(i) {
    state.query = i;
    draw();
  }

  function describe() {
    const query = "Query \u201c" + tokens[state.query] + "\u201d";
    const tops = [];
    heads.forEach((head, h) => {
      if (!state.shown[h]) {
        return;
      }
      const row = head.weights[state.query];
      const k = row.indexOf(Math.max(...row));
      tops.push(head.name + " \u2192 \u201c" + tokens[k] + "\u201d (" +
        percent(row[k]) + ")");
    });
    if (tops.length === 0) {
      return query + ". No head is shown: switch one on, or press show all.";
    }
    return query + ". Where each head shown looks most: " + tops.join(", ") +
      ". Line width and opacity show the attention weight.";
  }

  // On a narrow screen the row of tokens scrolls sideways (the arcs with
  // it): keep the query token in view.
  function keepInView(button) {
    const left = button.offsetLeft;
    const right = left + button.offsetWidth;
    if (left < stage.scrollLeft) {
      stage.scrollLeft = left - 8;
    } else if (right > stage.scrollLeft + stage.clientWidth) {
      stage.scrollLeft = right - stage.clientWidth + 8;
    }
  }

  function draw() {
    buttons.forEach((button, i) => {
      const current = i === state.query;
      button.setAttribute("aria-pressed", String(current));
      button.tabIndex = current ? 0 : -1;
    });
    toggles.forEach((toggle, h) => {
      toggle.setAttribute("aria-pressed", String(state.shown[h]));
    });
    caption.textContent = describe();
    keepInView(buttons[state.query]);

    // Centres in the stage's scrolled content, which the svg spans.
    const centres = buttons.map(
      (button) => button.offsetLeft + button.offsetWidth / 2);
    const height = HEIGHT;
    svg.setAttribute("width", String(Math.max(1, row.scrollWidth)));
    svg.setAttribute("height", String(height));
    // Built apart, then put in at once: one change to the page, not one
    // per arc.
    const arcs = document.createDocumentFragment();
    const from = centres[state.query];
    heads.forEach((head, h) => {
      if (!state.shown[h]) {
        return;
      }
      head.weights[state.query].forEach((weight, k) => {
        const to = centres[k];
        // A quadratic curve peaks at half its control point's height.
        const lift = Math.min(height - 6, 16 + 0.4 * Math.abs(to - from) + 3 * h);
        const loop = 18 + 3 * h;
        const d = k === state.query
          ? "M" + (from - 5) + "," + height + " C" + (from - 14) + "," +
            (height - loop) + " " + (from + 14) + "," + (height - loop) +
            " " + (from + 5) + "," + height
          : "M" + from + "," + height + " Q" + (from + to) / 2 + "," +
            (height - 2 * lift) + " " + to + "," + height;
        const path = document.createElementNS(SVG, "path");
        path.setAttribute("d", d);
        path.setAttribute("class", "mha-arc");
        path.setAttribute("stroke", head.colour);
        path.setAttribute("stroke-width", String(0.5 + 6 * weight));
        path.setAttribute("stroke-opacity", String(0.1 + 0.9 * weight));
        path.dataset.head = String(h);
        path.dataset.key = String(k);
        path.dataset.weight = weight.toFixed(3);
        const title = document.createElementNS(SVG, "title");
        title.textContent = head.name + ": \u201c" + tokens[state.query] +
          "\u201d \u2192 \u201c" + tokens[k] + "\u201d " + percent(weight);
        path.append(title);
        arcs.append(path);
      });
    });
    svg.replaceChildren(arcs);
  }

  draw();
  if (window.ResizeObserver) {
    new ResizeObserver(draw).observe(stage);
  }
})();
