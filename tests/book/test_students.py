"""The students' edition as `make book-students` built it
(_build/students/html): no page shows a "Solution" or an "Answer", and
the labs say where they are. Checked on the build where one exists (it is
not part of `make test`); tests/unit/test_students_edition.py checks the
hook on a small book without one."""

import re

import pytest

from chapter import ROOT, toc_files

STUDENTS = ROOT / "_build" / "students" / "html"
TITLE = re.compile(
    r'class="admonition-title">\s*(Solution|Answer)\s*<', re.IGNORECASE
)


@pytest.fixture(scope="module")
def pages():
    if not (STUDENTS / "index.html").exists():
        pytest.skip("no students' edition: run make book-students")
    return {
        name: (STUDENTS / f"{name}.html").read_text()
        for name in toc_files()
        if (STUDENTS / f"{name}.html").exists()
    }


def test_no_solution_reaches_the_students(pages):
    shown = [name for name, html in pages.items() if TITLE.search(html)]
    assert not shown, f"solutions or answers left in {shown}"


def test_labs_say_where_the_solutions_are(pages):
    assert "Solutions are in the teacher" in pages["book/labs"]
    assert "worked answer is in the teacher" in pages["book/labs"]
