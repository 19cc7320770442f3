/* The live lab's table: for every layer and head, the share of attention,
 * averaged over the queries, that goes to [CLS] and [SEP] (the worker
 * sums it). A head switched off is marked with a cross and greyed.
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

  class TableView {
    constructor() {
      this.slot = element("div", "mha-live-summary");
      this.element = element("div", "mha-live-table-view");
      this.element.append(element("p", "mha-live-heading",
        "Share of each head's attention on [CLS] and [SEP]"), this.slot);
    }

    show(result) {
      const { L, h, shares } = result.flat;
      const table = element("table", "mha-live-table");
      table.append(element("caption", "",
        "Rows: layers; columns: heads. Each cell: the share of attention, " +
        "averaged over all query tokens, that goes to [CLS] and [SEP]; " +
        "\u00d7 marks a head switched off."));
      const header = element("tr");
      header.append(element("th", "", "layer"));
      for (let k = 0; k < h; k++) {
        const th = element("th", "", String(k));
        th.scope = "col";
        header.append(th);
      }
      table.append(header);
      for (let l = 0; l < L; l++) {
        const row = element("tr");
        const th = element("th", "", String(l));
        th.scope = "row";
        row.append(th);
        for (let k = 0; k < h; k++) {
          const share = shares[l * h + k];
          const on = result.headMask[l][k] === 1;
          const cell = element("td", "",
            share.toFixed(2) + (on ? "" : "\u00d7"));
          cell.style.setProperty("--mha-share", share.toFixed(3));
          if (!on) {
            cell.classList.add("mha-live-off");
            cell.title = "head " + k + " of layer " + l + " is switched off";
          }
          row.append(cell);
        }
        table.append(row);
      }
      this.slot.replaceChildren(table);
    }
  }

  MhaLive.TableView = TableView;
})(window);
