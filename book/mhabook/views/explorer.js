/* Head explorer: arcs from a query token to the tokens it attends to, one
 * colour per head. Self-contained (no libraries), so it works in a static
 * page with no kernel. Python (mhabook/views/explorer.py) replaces
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
  // Weights this close to a row's largest tie with it: the caption names
  // them all (or says the row is spread evenly), never the first alone.
  const TIE = 0.005;
  const tokens = params.tokens;
  const heads = params.heads;
  // A head whose colour an earlier head already has (the palette has
  // fewer colours than BERT has heads) is marked: dashed arcs, a hollow
  // swatch.
  const marked = heads.map((head, h) =>
    heads.slice(0, h).some((other) => other.colour === head.colour));
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
    const swatch = element("span", marked[h] ? "mha-swatch mha-marked"
      : "mha-swatch");
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

  // Where one row of weights looks most: its largest weight's token, or
  // every token that ties with it.
  function most(row) {
    const top = Math.max(...row);
    const tied = [];
    row.forEach((weight, k) => {
      if (weight >= top - TIE) {
        tied.push(k);
      }
    });
    if (tied.length === 1) {
      return "\u201c" + tokens[tied[0]] + "\u201d (" + percent(top) + ")";
    }
    if (tied.length === row.length) {
      return "spread evenly (" + percent(top) + " each)";
    }
    const named = tied.slice(0, 3).map((k) => "\u201c" + tokens[k] + "\u201d");
    const rest = tied.length - named.length;
    const list = rest > 0
      ? named.join(", ") + " and " + rest + " more"
      : named.slice(0, -1).join(", ") + " and " + named[named.length - 1];
    return list + " (" + percent(top) + " each)";
  }

  function describe() {
    const query = "Query \u201c" + tokens[state.query] + "\u201d";
    const tops = [];
    heads.forEach((head, h) => {
      if (state.shown[h]) {
        tops.push(head.name + " \u2192 " + most(head.weights[state.query]));
      }
    });
    if (tops.length === 0) {
      return query + ". No head is shown: switch one on, or press show all.";
    }
    const drawn = tokens.length > MAX_ARCS
      ? " Each head's " + MAX_ARCS + " heaviest arcs are drawn." : "";
    return query + ". Where each head shown looks most: " + tops.join(", ") +
      ". Line width and opacity show the attention weight." + drawn;
  }

  // The key the shown heads give the query most weight, itself aside.
  function target() {
    let best = state.query;
    let most = -1;
    tokens.forEach((_, k) => {
      if (k === state.query) {
        return;
      }
      let weight = 0;
      heads.forEach((head, h) => {
        weight += state.shown[h] ? head.weights[state.query][k] : 0;
      });
      if (weight > most) {
        most = weight;
        best = k;
      }
    });
    return best;
  }

  // On a narrow screen the row of tokens scrolls sideways (the arcs with
  // it): keep the query token in view, and the token it attends to most
  // if both fit.
  function keepInView(query, key) {
    const ends = [query, key].map((b) => [b.offsetLeft, b.offsetLeft + b.offsetWidth]);
    const left = Math.min(ends[0][0], ends[1][0]);
    const right = Math.max(ends[0][1], ends[1][1]);
    const [qLeft, qRight] = ends[0];
    if (right - left + 16 <= stage.clientWidth) {
      if (left < stage.scrollLeft) {
        stage.scrollLeft = left - 8;
      } else if (right > stage.scrollLeft + stage.clientWidth) {
        stage.scrollLeft = right - stage.clientWidth + 8;
      }
    } else if (qLeft < stage.scrollLeft) {
      stage.scrollLeft = qLeft - 8;
    } else if (qRight > stage.scrollLeft + stage.clientWidth) {
      stage.scrollLeft = qRight - stage.clientWidth + 8;
    }
    stage.classList.toggle("mha-scrolls", row.scrollWidth > stage.clientWidth + 1);
  }

  // The keys whose arcs are drawn: all of them in a short text; in a long
  // one the MAX_ARCS heaviest, since thousands of faint arcs cost the page
  // seconds to paint and show nothing.
  const MAX_ARCS = 24;
  function strongest(row) {
    const keys = Array.from(row, (_, k) => k);
    if (keys.length <= MAX_ARCS) {
      return keys;
    }
    return keys.sort((a, b) => row[b] - row[a]).slice(0, MAX_ARCS);
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
    keepInView(buttons[state.query], buttons[target()]);

    // Centres in the stage's scrolled content, which the svg spans.
    const centres = buttons.map(
      (button) => button.offsetLeft + button.offsetWidth / 2);
    const height = HEIGHT;
    svg.setAttribute("width", String(Math.max(1, row.scrollWidth)));
    svg.setAttribute("height", String(height));
    // Built apart, then put in at once: one change to the page, not one
    // per arc.
    const arcs = document.createDocumentFragment();
    // Heads that send a query to the same key must not hide each other:
    // each head's arcs leave and land a little apart, and long arcs top
    // out at a height of their own.
    const spread = Math.min(12, (height - 40) / heads.length);
    const nudge = Math.min(4, 24 / heads.length);
    heads.forEach((head, h) => {
      if (!state.shown[h]) {
        return;
      }
      const shift = (h - (heads.length - 1) / 2) * nudge;
      const from = centres[state.query] + shift;
      const top = height - 6 - spread * h;
      const row = head.weights[state.query];
      strongest(row).forEach((k) => {
        const weight = row[k];
        const to = centres[k] + shift;
        // A quadratic curve peaks at half its control point's height.
        const lift = Math.min(top, 16 + 0.4 * Math.abs(to - from) + 8 * h);
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
        if (marked[h]) {
          path.setAttribute("stroke-dasharray", "6 3");
        }
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
