/* Cut BertViz's four sentence filters from its "All" view, in the page
 * (mhabook/views/bertviz_view.py pastes this before BertViz's own script). */
function mhaCutFilters(params, b) {
  const all = params.attention[0];
  const T = all.left_text.length;
  const spans = {A: [0, b], B: [b, T]};
  all.name = "All";
  for (const [x, y] of [["A", "A"], ["B", "B"], ["A", "B"], ["B", "A"]]) {
    const [rows, cols] = [spans[x], spans[y]];
    params.attention.push({
      name: "Sentence " + x + " -> Sentence " + y,
      attn: all.attn.map((layer) => layer.map((head) => head
        .slice(rows[0], rows[1]).map((row) => row.slice(cols[0], cols[1])))),
      left_text: all.left_text.slice(rows[0], rows[1]),
      right_text: all.right_text.slice(cols[0], cols[1]),
    });
  }
  return params;
}
