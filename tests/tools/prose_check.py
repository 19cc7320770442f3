"""A rough, source-level reader_check for one notebook, without a build.

    .venv/bin/python tests/tools/prose_check.py book/real_heads.ipynb [--list]

Counts what tests/tools/reading_counts.py counts on the built page, with
its rules for words and sentences, from the notebook itself: prose words
outside dropdowns, words inside them, sentences over 40 words, code lines
in view and cells over 20 lines, and, for many_heads, the words after the
`[1, 5, 768]` round-trip cell; for real_heads, the words before the first
head view. The build's count is the one that decides (the budgets are in
tests/book/test_rules.py); this one is for drafting.
"""

import re
import sys

import nbformat
from reading_counts import HIDDEN_CELL, sentences, words

HIDDEN = {tag.removeprefix("tag_") for tag in HIDDEN_CELL}


def clean(text):
    text = re.sub(r"\{glue(?::\w+)?\}`[^`]*`", "N", text)
    text = re.sub(
        r"\{(?:term|numref|ref|cite|doc)\}`([^`<]*)[^`]*`", r"\1", text
    )
    # a formula as the built page holds it: one word, as its TeX
    text = re.sub(r"\$\$(.*?)\$\$", r"\\[\1\\]", text, flags=re.S)
    text = re.sub(r"\$([^$]+)\$", r"\\(\1\\)", text)
    return text


def blocks(md):
    """(text, folded) paragraphs of a markdown cell, without code fences."""
    out, fence, folded, para = [], [], False, []
    for line in md.splitlines():
        m = re.match(r"^\s*(`{3,}|:{3,})\s*(\{[\w-]+\})?", line)
        if m and (m.group(2) or (fence and m.group(1) == fence[-1][0])):
            if para:
                out.append((" ".join(para), folded))
                para = []
            if m.group(2):
                fence.append((m.group(1), m.group(2)))
            else:
                fence.pop()
            folded = any(
                k in ("{dropdown}",) or "toggle" in k for _, k in fence
            )
            continue
        if m and not fence:  # a plain code fence
            fence.append((m.group(1), "{code}"))
            continue
        if any(k in ("{code}", "{code-cell}", "{math}") for _, k in fence):
            continue
        if fence and re.match(r"^:class:.*dropdown", line.strip()):
            fence[-1] = (fence[-1][0], "{dropdown}")
            folded = True
        if not line.strip() or line.startswith("#") or line.startswith(":"):
            if para:
                out.append((" ".join(para), folded))
                para = []
            continue
        if re.match(r"^\s*[-*] |^\s*\d+\. ", line) and para:
            out.append((" ".join(para), folded))
            para = []
        para.append(line.strip())
    if para:
        out.append((" ".join(para), folded))
    return out


def main(path, show):
    nb = nbformat.read(path, as_version=4)
    prose = fold = code = 0
    longs, cells, n_sent, n_words = [], [], 0, 0
    after_roundtrip = before_view = 0
    seen_roundtrip = seen_view = False
    for cell in nb.cells:
        texts = []
        if cell.cell_type == "markdown":
            texts = blocks(cell.source)
        else:
            tags = set(cell.metadata.get("tags", []))
            caption = cell.metadata.get("mystnb", {}).get("figure", {})
            if caption.get("caption"):
                texts = [(caption["caption"], False)]
            if "head_view" in cell.source and "import" not in cell.source:
                seen_view = True
            if "1, 5" in cell.source and ".shape" in cell.source:
                seen_roundtrip = True
            if not tags & HIDDEN:
                lines = [ln for ln in cell.source.splitlines() if ln.strip()]
                code += len(lines)
                if len(lines) > 20:
                    cells.append((len(lines), lines[0][:60]))
        for text, folded in texts:
            text = clean(text)
            w = len(words(text))
            if folded:
                fold += w
            else:
                prose += w
                after_roundtrip += w if seen_roundtrip else 0
                before_view += 0 if seen_view else w
            for s in sentences(text):
                n = len(words(s))
                n_sent += 1
                n_words += n
                if n > 40:
                    longs.append((n, s))
    print(
        f"{path}: prose {prose}, fold {fold}, >40 {len(longs)}, mean "
        f"{n_words / max(n_sent, 1):.1f}, code {code}, >20 {len(cells)}"
    )
    print(
        f"  prose after the first [1, 5, ...] shape cell: {after_roundtrip}; "
        f"before the first head view: {before_view}"
    )
    if show:
        for n, s in longs:
            print(f"  long ({n}): {s[:200]}")
        for n, first in cells:
            print(f"  cell ({n} lines): {first}")


if __name__ == "__main__":
    main(sys.argv[1], "--list" in sys.argv)
