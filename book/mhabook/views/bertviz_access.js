/* Keys, labels and marks for BertViz's head view. mhabook/views/
 * bertviz_view.py pastes this after the view; for the live lab,
 * book/_ext/live_lab.py appends it to its copy of head_view.js.
 *
 * BertViz draws its head squares and its tokens as SVG that only a mouse
 * reaches, and draws them again at each change of layer or filter. After
 * each drawing this
 * - makes the head squares toggle buttons, one stop for Tab (the arrow
 *   keys move along them): Enter or Space is a click (show or hide the
 *   head); Shift with either, or a second press within half a second, is
 *   a double-click (that head alone; all heads again if it was alone);
 * - writes each head's number on its square, and dashes the lines of a
 *   head whose colour an earlier head has (the palette has fewer colours
 *   than BERT has heads);
 * - makes each column of tokens one stop for Tab (the arrow keys move
 *   along it): the token with the focus shows its attention, as under
 *   the pointer.
 * colours: the palette BertViz was given; numbers (optional): the head
 * number of each head drawn, when they are not 0, 1, 2, ...
 */
/* exported mhaBertvizAccess */
function mhaBertvizAccess(root, colours, numbers) {
  "use strict";
  const vis = root && root.querySelector("#vis");
  if (!vis) {
    return;
  }
  const SVG = "http://www.w3.org/2000/svg";
  const DOUBLE_MS = 500;
  const number = (i) => (numbers ? numbers[i] : i);
  const colour = (i) => colours[i % colours.length].toLowerCase();
  const marked = (i) => i >= new Set(colours.map((c) => c.toLowerCase())).size;

  function mouse(target, type) {
    target.dispatchEvent(new MouseEvent(type, { bubbles: true }));
  }

  // Relative luminance of a CSS colour "rgb(r, g, b)" (WCAG 2).
  function luminance(css) {
    const [r, g, b] = css.match(/[\d.]+/g).slice(0, 3).map((v) => {
      const c = Number(v) / 255;
      return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  }

  // One Tab stop for a row of items; the arrow keys (and Home, End) move
  // the focus along it.
  function rove(items, keys) {
    items.forEach((item, i) => {
      item.tabIndex = i === 0 ? 0 : -1;
      item.addEventListener("keydown", (event) => {
        const moves = { [keys[0]]: i - 1, [keys[1]]: i + 1, Home: 0,
          End: items.length - 1 };
        if (event.key in moves) {
          event.preventDefault();
          const next = Math.max(0, Math.min(items.length - 1, moves[event.key]));
          items.forEach((other) => { other.tabIndex = -1; });
          items[next].tabIndex = 0;
          items[next].focus();
        }
      });
    });
  }

  function heads(svg) {
    const box = svg.querySelector(":scope > g:last-of-type");
    const squares = Array.from(box.querySelectorAll(":scope > rect"));
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Heads: Enter shows or hides one; " +
      "Shift+Enter shows it alone");
    const labels = squares.map((square, i) => {
      square.setAttribute("role", "button");
      square.setAttribute("aria-label", "head " + number(i));
      const label = document.createElementNS(SVG, "text");
      label.setAttribute("class", "mha-head-number");
      label.setAttribute("aria-hidden", "true");
      label.setAttribute("x", String(Number(square.getAttribute("x")) +
        Number(square.getAttribute("width")) / 2));
      label.setAttribute("y", String(Number(square.getAttribute("y")) +
        Number(square.getAttribute("height")) / 2));
      label.setAttribute("text-anchor", "middle");
      label.setAttribute("dominant-baseline", "central");
      label.setAttribute("font-size", "11px");
      label.setAttribute("pointer-events", "none");
      label.textContent = String(number(i));
      box.append(label);
      let pressed = -Infinity;
      square.addEventListener("keydown", (event) => {
        if (event.key !== "Enter" && event.key !== " ") {
          return;
        }
        event.preventDefault();
        const now = performance.now();
        if (event.shiftKey) {
          mouse(square, "dblclick");
          pressed = -Infinity;
          return;
        }
        // A mouse's double-click clicks twice, then double-clicks.
        mouse(square, "click");
        if (now - pressed < DOUBLE_MS) {
          mouse(square, "dblclick");
          pressed = -Infinity;
        } else {
          pressed = now;
        }
      });
      return label;
    });
    // BertViz shows a head in its colour and a hidden one lighter.
    function update() {
      squares.forEach((square, i) => {
        const fill = square.getAttribute("fill") || "";
        square.setAttribute("aria-pressed",
          String(fill.toLowerCase() === colour(number(i))));
        const light = luminance(getComputedStyle(square).fill) > 0.18;
        labels[i].style.fill = light ? "#000" : "#fff";
      });
    }
    box.addEventListener("click", update);
    box.addEventListener("dblclick", update);
    update();
    rove(squares, ["ArrowLeft", "ArrowRight"]);
  }

  function tokens(svg) {
    for (const side of ["left", "right"]) {
      const column = svg.querySelector("#" + side);
      if (!column) {
        continue;
      }
      const items = Array.from(column.querySelectorAll(
        ":scope > g:not(.attentionBoxes) > g"));
      items.forEach((item) => {
        item.setAttribute("role", "button");
        item.setAttribute("aria-label", item.textContent + " (" +
          (side === "left" ? "query" : "key") + ")");
        item.addEventListener("focus", () => mouse(item, "mouseover"));
        item.addEventListener("blur", () => mouse(column, "mouseleave"));
      });
      rove(items, ["ArrowUp", "ArrowDown"]);
    }
  }

  function lines(svg) {
    svg.querySelectorAll("#attention > g.headAttention").forEach((g) => {
      const i = Number(g.getAttribute("head-index"));
      if (marked(number(i))) {
        g.setAttribute("stroke-dasharray", "4 2");
      }
    });
  }

  function decorate() {
    const svg = vis.querySelector("svg");
    if (svg && !svg.dataset.mhaAccess) {
      svg.dataset.mhaAccess = "true";
      heads(svg);
      tokens(svg);
      lines(svg);
    }
  }

  new MutationObserver(decorate).observe(vis, { childList: true });
  decorate();
}
