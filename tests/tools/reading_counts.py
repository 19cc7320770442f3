"""What a reader of the built book meets, page by page.

    .venv/bin/python tests/tools/reading_counts.py [_build/html] [--list]

Reads each page's <article> in the build, in the order of _toc.yml, and
counts (as ../shared/tools/reader_check.py does, rule for rule):

  prose    words of running text (paragraphs, list items, captions),
           outside dropdowns and code
  fold     words inside dropdowns (togglebutton or sphinx-design), read
           only on a click
  >40      sentences of more than 40 words, prose and dropdowns together
  mean     mean words per sentence
  code     non-empty lines of code cells in view (not hide-input,
           hide-cell or remove-*)
  >20      code cells in view with more than 20 non-empty lines
  minutes  prose at 200 words a minute, plus 2.5 s a line of code in view

A formula is one word: KaTeX typesets it at build time, glyph by glyph,
so each is read back as the TeX of its annotation. `--list` prints every
long sentence and long cell. tests/book/test_rules.py holds the pages to
the reading budgets; tests/tools/prose_check.py counts a notebook's
source with the same rules, while drafting.
"""

import re
import sys
from pathlib import Path

import yaml
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[2]
WORD = re.compile(r"[A-Za-z0-9][\w’'\-.%,]*")
SENT_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z“(\[])")
FOLDED = ("dropdown", "sd-dropdown", "toggle-hidden")
HIDDEN_CELL = (
    "tag_hide-input",
    "tag_hide-cell",
    "tag_remove-input",
    "tag_remove-cell",
)
WORDS_A_MINUTE = 200
SECONDS_A_CODE_LINE = 2.5


def toc_parts(root=ROOT):
    """[(part caption, page)] in reading order, the page without suffix;
    the root page's part is ""."""
    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text())
    found = [("", toc["root"])]

    def walk(caption, entries):
        for entry in entries:
            if "file" in entry:
                found.append((caption, entry["file"]))
            walk(caption, entry.get("sections", []))

    walk("", toc.get("chapters", []))
    for part in toc.get("parts", []):
        walk(part.get("caption", ""), part["chapters"])
    return found


def words(text):
    """The words of a text; a formula, \\(...\\) or \\[...\\], is one."""
    text = re.sub(r"\\\[.*?\\\]|\\\(.*?\\\)", " MATH ", text, flags=re.S)
    return WORD.findall(text)


def sentences(text):
    """Its sentences of three words or more; a displayed formula ends one."""
    text = re.sub(r"\\\[.*?\\\]", " MATH. ", text, flags=re.S)
    text = re.sub(r"\\\(.*?\\\)", " MATH ", text, flags=re.S)
    return [s for s in SENT_END.split(text) if len(words(s)) >= 3]


def in_fold(tag):
    for parent in tag.parents:
        classes = parent.get("class") or []
        if parent.name == "details" and "hide" not in classes:
            return True
        if any(c in FOLDED for c in classes):
            return True
    return False


def hidden_cell(cell):
    classes = cell.get("class") or []
    if any(c in HIDDEN_CELL for c in classes):
        return True
    return any(
        p.name == "details" and "hide" in (p.get("class") or [])
        for p in cell.parents
    )


def math_as_tex(soup):
    """Each formula KaTeX typeset (MathML and HTML glyphs) put back as its
    TeX, so that it counts as one word, not as every glyph twice."""
    for katex in soup.select("span.katex"):
        annotation = katex.find("annotation")
        tex = annotation.get_text() if annotation else ""
        display = katex.find_parent(class_="katex-display") is not None
        katex.replace_with(f"\\[{tex}\\]" if display else f"\\({tex}\\)")
    return soup


def article(html):
    soup = math_as_tex(BeautifulSoup(html, "html.parser"))
    return soup.find("article") or soup


def page_counts(html):
    """The counts of one built page (its HTML text), as a dict: prose,
    fold, long (the sentences over 40 words), mean, code, cells ((lines,
    first line) of each cell over 20 lines) and minutes."""
    art = article(html)
    junk = (
        "script, style, button, .headerlink, .cell_output,"
        " .toggle-details__summary"
    )
    for tag in art.select(junk):
        tag.decompose()
    prose, fold, long_sentences, n_sentences, n_words = 0, 0, [], 0, 0
    blocks = ["p", "li", "dt", "dd", "figcaption", "caption"]
    for block in art.find_all(blocks):
        if block.find_parent("div", class_="cell") or block.find(["p", "li"]):
            continue
        text = re.sub(r"\s+", " ", block.get_text(" ")).strip()
        if in_fold(block):
            fold += len(words(text))
        else:
            prose += len(words(text))
        for sentence in sentences(text):
            n_sentences += 1
            n_words += len(words(sentence))
            if len(words(sentence)) > 40:
                long_sentences.append(sentence)
    code_lines, long_cells = 0, []
    for cell in art.select("div.cell"):
        if hidden_cell(cell):
            continue
        source = cell.select_one("div.cell_input pre")
        if source is None:
            continue
        lines = [ln for ln in source.get_text().splitlines() if ln.strip()]
        code_lines += len(lines)
        if len(lines) > 20:
            long_cells.append((len(lines), lines[0][:60]))
    return {
        "prose": prose,
        "fold": fold,
        "long": long_sentences,
        "mean": n_words / max(n_sentences, 1),
        "code": code_lines,
        "cells": long_cells,
        "minutes": prose / WORDS_A_MINUTE
        + code_lines * SECONDS_A_CODE_LINE / 60,
    }


def book_counts(html_dir, root=ROOT):
    """{page: counts} of every page of _toc.yml built in html_dir."""
    counts = {}
    for _, page in toc_parts(root):
        path = Path(html_dir) / f"{page}.html"
        if path.exists():
            counts[page] = page_counts(path.read_text())
    return counts


def words_to_head_view(html_dir, root=ROOT):
    """Prose words from the first `[1, 5, 768]` output to the first
    BertViz view, in reading order (None if either is missing)."""
    counting, total = False, 0
    for _, page in toc_parts(root):
        path = Path(html_dir) / f"{page}.html"
        if not path.exists():
            continue
        for el in article(path.read_text()).find_all(
            ["p", "li", "pre", "div"]
        ):
            if el.name == "div" and (el.get("id") or "").startswith("bertviz"):
                if counting:
                    return total
            if (
                el.name == "pre"
                and "1, 5, 768" in el.get_text()
                and el.find_parent("div", class_="cell_output")
            ):
                counting = True
            if (
                counting
                and el.name in ("p", "li")
                and not el.find(["p", "li"])
                and not in_fold(el)
            ):
                total += len(words(el.get_text(" ")))
    return None


def main(html_dir, show):
    print(
        f"{'page':28} {'prose':>6} {'fold':>5} {'>40':>4} {'mean':>5} "
        f"{'code':>5} {'>20':>4} {'min':>5}"
    )
    counts = book_counts(html_dir)
    totals = {}
    for part, page in toc_parts():
        if page not in counts:
            print(f"{page:28} (not built)")
            continue
        c = counts[page]
        total = totals.setdefault(part or "(root)", [0, 0, 0, 0.0])
        total[0] += c["prose"]
        total[1] += len(c["long"])
        total[2] += len(c["cells"])
        total[3] += c["minutes"]
        print(
            f"{page:28} {c['prose']:6d} {c['fold']:5d} {len(c['long']):4d} "
            f"{c['mean']:5.1f} {c['code']:5d} {len(c['cells']):4d} "
            f"{c['minutes']:5.1f}"
        )
        if show:
            for s in c["long"]:
                print(f"    long sentence ({len(words(s))} words): {s[:220]}")
            for n, first in c["cells"]:
                print(f"    long cell ({n} lines): {first}")
    for part, (prose, longs, cells, minutes) in totals.items():
        print(
            f"part '{part}': prose {prose} words, {longs} sentences over 40"
            f" words, {cells} cells over 20 lines, about {minutes:.0f} minutes"
        )
    gap = words_to_head_view(html_dir)
    print(
        "prose words from the [1, 5, 768] round-trip to the first head view:",
        "not found" if gap is None else gap,
    )


if __name__ == "__main__":
    folders = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(Path(folders[0] if folders else "_build/html"), "--list" in sys.argv)
