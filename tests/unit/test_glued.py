"""mhabook.views.glued.verdict: glues a verdict's phrase and its record,
and refuses an all_above over no values (its phrase would claim nothing)."""

import json

import pytest

from mhabook.views import glued


def test_verdict_glues_the_phrase_and_its_record(monkeypatch):
    seen = {}
    monkeypatch.setattr(
        glued, "glue", lambda name, value, display: seen.update({name: value})
    )
    phrases = {True: "falls at every step", False: "does not"}
    assert glued.verdict("fid", "all_above", ([0.2, 0.1], 0), phrases)
    assert seen["fid"] == "falls at every step"
    assert json.loads(seen["fid__verdict"])["args"] == [[0.2, 0.1], 0]
    assert not glued.verdict("fid", "all_above", ([0.2, -0.1], 0), phrases)
    assert seen["fid"] == "does not"


def test_all_above_over_no_values_is_refused(monkeypatch):
    seen = {}
    monkeypatch.setattr(
        glued, "glue", lambda name, value, display: seen.update({name: value})
    )
    phrases = {True: "falls at every step", False: "does not"}
    with pytest.raises(ValueError, match="'fid': all_above got no values"):
        glued.verdict("fid", "all_above", ([], 0), phrases)
    assert seen == {}  # nothing glued


def test_glue_all_glues_each_value_under_its_name_out_of_view(monkeypatch):
    seen = {}
    monkeypatch.setattr(
        glued,
        "glue",
        lambda name, value, display: seen.update({name: (value, display)}),
    )
    glued.glue_all(ex_k=3, ex_head=8)
    assert seen == {"ex_k": (3, False), "ex_head": (8, False)}
