"""The rules that decide what a page says about the loaded weights."""

import json

import pytest
import torch

from mhabook.experiments import verdicts
from mhabook.experiments.verdicts import (
    check_record,
    compare,
    decide,
    how_many,
    sign,
)


def test_above_and_below_are_strict():
    assert verdicts.above(1.01, 1) and not verdicts.above(1, 1)
    assert verdicts.below(0.99, 1) and not verdicts.below(1, 1)
    assert verdicts.above(torch.tensor(2.0), torch.tensor(1.0))


def test_all_above_needs_every_value_and_at_least_one():
    assert verdicts.all_above([2, 3], 1)
    assert not verdicts.all_above([2, 0.5], 1)
    assert not verdicts.all_above([], 1)


def test_more_than_half_is_strict():
    assert verdicts.more_than_half(37, 72)
    assert not verdicts.more_than_half(36, 72)


@pytest.mark.parametrize(
    "count, total, word",
    [
        (0, 8, "none"),
        (3, 8, "some"),
        (4, 8, "some"),
        (5, 8, "most"),
        (8, 8, "all"),
    ],
)
def test_how_many(count, total, word):
    assert how_many(count, total) == word


def test_how_many_refuses_a_count_out_of_range():
    with pytest.raises(ValueError, match="between 0 and 8"):
        how_many(9, 8)


def test_compare_says_same_when_the_intervals_overlap():
    assert compare(1, 2, 3, 4) == "less"
    assert compare(3, 4, 1, 2) == "more"
    assert compare(1, 3, 2, 4) == "same"
    with pytest.raises(ValueError, match="low end"):
        compare(2, 1, 3, 4)


def test_sign_against_a_chance_bar():
    assert sign(0.5, 0.3) == "positive"
    assert sign(-0.5, 0.3) == "negative"
    assert sign(-0.27, 0.28) == "neither"
    with pytest.raises(ValueError):
        sign(float("nan"), 0.3)


def test_above_by_gives_a_size_word_only_above_zero():
    assert verdicts.above_by(-2, -1, 0.5, 0.1) == "below"
    assert verdicts.above_by(-1, 1, 0.5, 0.1) == "neither"
    assert verdicts.above_by(0.1, 0.2, 0.05, 0.1) == "barely"
    assert verdicts.above_by(0.1, 0.2, 0.4, 0.1) == "clearly"
    with pytest.raises(ValueError, match="low end"):
        verdicts.above_by(2, 1, 0.5, 0.1)


def test_decide_names_a_missing_phrase_and_a_missing_rule():
    with pytest.raises(KeyError, match="no phrase"):
        decide("above", [2, 1], {False: "does not hold"})
    with pytest.raises(KeyError, match="no verdict rule"):
        decide("bigger", [2, 1], {True: "holds"})


def test_a_glued_record_is_decided_again(monkeypatch):
    from mhabook.views import glued as page

    glued = {}
    monkeypatch.setattr(
        page, "glue", lambda k, v, display: glued.update({k: v})
    )
    outcome = page.verdict(
        "claim",
        "above",
        (torch.tensor(1.4), 1.0),
        {True: "holds", False: "does not hold"},
    )
    assert outcome is True and glued["claim"] == "holds"
    assert check_record(glued["claim"], glued["claim__verdict"]) == "holds"
    record = json.loads(glued["claim__verdict"])
    assert record["args"] == [pytest.approx(1.4), 1.0]
    with pytest.raises(AssertionError, match="gives 'holds'"):
        check_record("does not hold", glued["claim__verdict"])


def test_ratio_margin_places_an_interval_against_one_and_its_margin():
    assert verdicts.ratio_margin(0.5, 0.8, 0.1) == "less"
    assert verdicts.ratio_margin(1.2, 1.4, 0.1) == "more"
    assert verdicts.ratio_margin(1.06, 1.08, 0.1) == "over"  # all above 1
    assert verdicts.ratio_margin(0.91, 0.96, 0.1) == "under"
    assert verdicts.ratio_margin(0.95, 1.05, 0.1) == "same"  # holds 1
    assert verdicts.ratio_margin(0.8, 1.02, 0.1) == "near_less"  # holds 1
    assert verdicts.ratio_margin(0.98, 1.2, 0.1) == "near_more"
    assert verdicts.ratio_margin(0.8, 0.95, 0.1) == "under"  # all below 1
    assert verdicts.ratio_margin(1.05, 1.2, 0.1) == "over"
    assert verdicts.ratio_margin(0.8, 1.2, 0.1) == "wide"
    with pytest.raises(ValueError, match="low <= high"):
        verdicts.ratio_margin(1.2, 1.1, 0.1)


def test_sign_near_says_just_inside_the_bar():
    assert verdicts.sign_near(-0.27, 0.28) == "near"
    assert verdicts.sign_near(0.26, 0.28) == "near"
    assert verdicts.sign_near(-0.14, 0.28) == "neither"
    assert verdicts.sign_near(-0.40, 0.28) == "negative"
    assert verdicts.sign_near(0.30, 0.28) == "positive"
    assert verdicts.sign_near(0.2, 0.28, margin=0.3) == "near"


def test_the_measurements_import_no_page_rendering():
    """Experiments return data; views draw and glue (issue 33)."""
    import ast
    from pathlib import Path

    import mhabook

    folder = Path(mhabook.__file__).parent / "experiments"
    rendering = ("matplotlib", "IPython", "myst_nb")
    found = []
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [
                (path.name, n) for n in names if n.split(".")[0] in rendering
            ]
    assert found == []
