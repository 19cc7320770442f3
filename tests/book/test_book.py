"""The whole book builds with warnings as errors, and says what it computed."""

import re

import nbformat
import pytest
import yaml
from bs4 import BeautifulSoup

from chapter import ROOT, toc_files, toc_notebooks


def test_every_page_is_built(built_book):
    for name in toc_files():
        assert (built_book / "html" / f"{name}.html").exists(), name


def test_glued_numbers_reach_the_pages(built_book):
    page = (built_book / "html" / "book" / "one_head.html").read_text()
    share = r"(about \de-\d+|\d[\d.]*%)"  # the tokens off the diagonal
    rest = re.search(rf"together get\s+<span[^>]*>\s*{share}", page)
    assert rest, "the glued off-diagonal weight is missing from section 1"
    assert "{glue" not in page


def _page(built_book, notebook):
    relative = notebook.relative_to(ROOT).with_suffix(".html")
    return (built_book / "html" / relative).read_text()


@pytest.mark.parametrize("notebook", toc_notebooks(), ids=lambda p: p.stem)
def test_notebook_pages_carry_launch_buttons(built_book, notebook):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]["url"].removeprefix("https://github.com/")
    branch = config["repository"]["branch"]
    launch = config["launch_buttons"]
    path = notebook.relative_to(ROOT).as_posix()
    page = BeautifulSoup(_page(built_book, notebook), "html.parser")
    links = {a["href"] for a in page.find_all("a", href=True)}
    binder = f"{launch['binderhub_url']}/v2/gh/{repo}/{branch}"
    assert f"{binder}?urlpath=lab/tree/{path}" in links
    assert f"{launch['colab_url']}/github/{repo}/blob/{branch}/{path}" in links
    assert page.find(class_="btn-launch-thebe"), "no live-code button"
    download = [h for h in links if h.endswith(f"_sources/{path}")]
    assert download, "no .ipynb download"
    target = (built_book / "html" / path).parent / download[0]
    assert target.resolve().exists()


@pytest.mark.parametrize("notebook", toc_notebooks(), ids=lambda p: p.stem)
def test_figures_have_captions_names_and_alt_text(built_book, notebook):
    page = BeautifulSoup(_page(built_book, notebook), "html.parser")
    images = page.select("article.bd-article img")
    cells = nbformat.read(notebook, as_version=4).cells
    declared = [c for c in cells if "figure" in c.metadata.get("mystnb", {})]
    assert len(images) == len(declared)
    for image in images:
        assert image.get("alt"), f"{image.get('src')} has no alt text"
        figure = image.find_parent("figure")
        assert figure is not None, f"{image.get('src')} is not a figure"
        assert figure.get("id"), "figure has no name to refer to"
        assert figure.find("figcaption").get_text(strip=True)


def test_every_glossary_term_is_linked_from_the_text(built_book):
    text = "".join(
        (built_book / "html" / "book" / f"{p.stem}.html").read_text()
        for p in toc_notebooks()
    )
    glossary = BeautifulSoup(
        (built_book / "html" / "book" / "glossary.html").read_text(),
        "html.parser",
    )
    for term in glossary.select("dl.glossary dt"):
        assert f'href="glossary.html#{term["id"]}"' in text, term["id"]


def test_pages_stay_light(built_book):
    for name in toc_files():
        size = (built_book / "html" / f"{name}.html").stat().st_size
        assert size <= 1.5 * 2**20, f"{name}.html is {size / 2**20:.1f} MiB"
