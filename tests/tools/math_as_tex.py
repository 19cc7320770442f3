"""Copy a built book with each typeset formula put back as its TeX source.

    .venv/bin/python tests/tools/math_as_tex.py _build/html _build/reader
    .venv/bin/python ../shared/tools/reader_check.py _build/reader

KaTeX typesets the formulas when the book is built, so a page's text holds
every formula twice (MathML and HTML), glyph by glyph. Tools that count
prose (../shared/tools/reader_check.py) expect what a page held when
MathJax typeset it in the browser: `\\(...\\)` and `\\[...\\]`, one formula
each. This writes that form, from the TeX that KaTeX keeps in each
formula's annotation; nothing else changes.
"""

import shutil
import sys
from pathlib import Path

from bs4 import BeautifulSoup


def as_tex(html):
    soup = BeautifulSoup(html, "html.parser")
    for formula in soup.select("span.katex"):
        tex = formula.find("annotation")
        display = formula.find_parent(class_="katex-display") is not None
        source = tex.get_text() if tex else ""
        text = f"\\[{source}\\]" if display else f"\\({source}\\)"
        (formula.find_parent(class_="katex-display") or formula).replace_with(
            text
        )
    return str(soup)


def main(source, target):
    source, target = Path(source), Path(target)
    shutil.rmtree(target, ignore_errors=True)
    for page in source.rglob("*.html"):
        out = target / page.relative_to(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(as_tex(page.read_text()))


if __name__ == "__main__":
    main(*sys.argv[1:3])
