/* Buttons that open BertViz's head view on one layer and one head
 * (mhabook/views/bertviz_view.py pastes this after the view). */
function mhaHeadPresets(root, group) {
  const layerMenu = root.querySelector("#layer");
  const squares = () => root.querySelectorAll("#vis svg > g:last-of-type > rect");
  const dblclick = (el) => el.dispatchEvent(new MouseEvent("dblclick", {bubbles: true}));
  for (const button of group.querySelectorAll("button")) {
    button.addEventListener("click", () => {
      const layer = button.dataset.layer, head = Number(button.dataset.head);
      layerMenu.value = layer;
      layerMenu.dispatchEvent(new Event("change", {bubbles: true}));
      // A double-click on a square shows that head alone, unless it is
      // already alone (then all): show another alone first, then this one.
      const boxes = squares();
      if (boxes.length > 1) dblclick(boxes[head === 0 ? 1 : 0]);
      dblclick(squares()[head]);
      for (const b of group.querySelectorAll("button")) {
        b.setAttribute("aria-pressed", String(b === button));
      }
    });
  }
}
