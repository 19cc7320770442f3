"""Verdicts: what the text says about a claim that depends on the weights.

A page states what holds for every BERT checkpoint with a plain ``assert``.
What depends on the loaded weights (a claim holds or not, a head is above
chance, a task is easy) is decided here instead, by a small named rule,
from the numbers. The page glues the phrase that the outcome selects, so
its prose reads true on whatever checkpoint produced the numbers:

    verdict("claim_1", "above", (low, 1.0),
            {True: "holds", False: "does not hold"})

``record`` gives the phrase and a record of the decision; the page's
``verdict`` (mhabook.views.glued) glues both, the record as
``<name>__verdict``, which the tests read back from the executed notebook
and decide again. This module computes and glues nothing itself.
"""

import json
import math


def above(value, bar):
    """True when `value` is strictly above `bar`."""
    return bool(float(value) > float(bar))


def below(value, bar):
    """True when `value` is strictly below `bar`."""
    return bool(float(value) < float(bar))


def all_above(values, bar):
    """True when every value is strictly above `bar` (and there is one)."""
    values = [float(v) for v in values]
    return bool(values) and all(v > float(bar) for v in values)


def more_than_half(count, total):
    """True when `count` is more than half of `total`."""
    return bool(2 * int(count) > int(total))


def how_many(count, total):
    """'none', 'some', 'most' or 'all' of `total` items."""
    count, total = int(count), int(total)
    if not 0 <= count <= total:
        raise ValueError(f"count {count} is not between 0 and {total}")
    if count == 0:
        return "none"
    if count == total:
        return "all"
    return "most" if 2 * count > total else "some"


def compare(low_a, high_a, low_b, high_b):
    """'less', 'more' or 'same': interval a against interval b.

    'less' only when all of a lies below all of b, 'more' the other way
    round; overlapping intervals cannot tell the two apart.
    """
    low_a, high_a, low_b, high_b = map(float, (low_a, high_a, low_b, high_b))
    if low_a > high_a or low_b > high_b:
        raise ValueError("an interval's low end is above its high end")
    if high_a < low_b:
        return "less"
    if low_a > high_b:
        return "more"
    return "same"


def ratio_margin(low, high, margin):
    """Where a ratio's interval (low, high) lies against 1 +- `margin`:
    'less' or 'more' when all of it is beyond the margin; 'under' or
    'over' when all of it is below or above 1, but not all beyond the
    margin; when it holds 1, 'same' when all of it is within the margin,
    'near_less' or 'near_more' when it crosses one edge, 'wide' both."""
    low, high, margin = map(float, (low, high, margin))
    if low > high or margin < 0:
        raise ValueError("need low <= high and a margin of 0 or more")
    edge_low, edge_high = 1 - margin, 1 + margin
    if high < edge_low:
        return "less"
    if low > edge_high:
        return "more"
    if high < 1:
        return "under"
    if low > 1:
        return "over"
    if low < edge_low and high > edge_high:
        return "wide"
    if low < edge_low:
        return "near_less"
    return "near_more" if high > edge_high else "same"


def sign(value, bar):
    """'positive', 'negative' or 'neither': `value` against +-`bar`.

    For a correlation against the size that chance reaches (`bar` >= 0).
    """
    value, bar = float(value), float(bar)
    if bar < 0 or math.isnan(value):
        raise ValueError(f"need a bar >= 0 and a number, got {value}, {bar}")
    if value > bar:
        return "positive"
    if value < -bar:
        return "negative"
    return "neither"


def above_by(low, high, kept, bar):
    """'below', 'neither', 'barely' or 'clearly': a size word for a gain.

    (low, high) is the range of a difference (a gain over a baseline):
    'below' when all of it is under 0, 'neither' when it holds 0. Above 0,
    `kept` is the share of a distance that the gain keeps (0 to 1), and the
    gain is 'barely' there when `kept` is below `bar`, else 'clearly'.
    """
    low, high, kept, bar = map(float, (low, high, kept, bar))
    if low > high:
        raise ValueError("the range's low end is above its high end")
    if high < 0:
        return "below"
    if low <= 0:
        return "neither"
    return "barely" if kept < bar else "clearly"


def sign_near(value, bar, margin=0.1):
    """Like `sign`, with 'near' when `value` is inside +-`bar` but its size
    is within `margin` (a share of `bar`) of it: just inside the bar."""
    outcome = sign(value, bar)
    if outcome == "neither" and abs(float(value)) >= (1 - margin) * bar:
        return "near"
    return outcome


RULES = {
    rule.__name__: rule
    for rule in (
        above,
        below,
        all_above,
        more_than_half,
        how_many,
        compare,
        ratio_margin,
        sign,
        sign_near,
        above_by,
    )
}


def _plain(value):
    """A tensor, numpy number or sequence of them as plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def decide(rule, args, phrases):
    """(outcome, phrase): the rule's outcome on `args`, and its phrase."""
    if rule not in RULES:
        raise KeyError(f"no verdict rule {rule!r}; the rules: {sorted(RULES)}")
    outcome = RULES[rule](*args)
    if outcome not in phrases:
        raise KeyError(
            f"rule {rule!r} gave {outcome!r}, which has no phrase: give one "
            f"for each of its outcomes"
        )
    return outcome, phrases[outcome]


def record(rule, args, phrases):
    """(outcome, phrase, record): decide `rule` on `args`, with a JSON
    record of the decision that a test can decide again (`check_record`).

    `phrases` maps each outcome of the rule to the words the text shows.
    """
    args = _plain(list(args))
    outcome, phrase = decide(rule, args, phrases)
    data = {
        "rule": rule,
        "args": args,
        "outcome": outcome,
        "phrases": [[key, text] for key, text in phrases.items()],
    }
    return outcome, phrase, json.dumps(data)


def check_record(phrase, record):
    """Decide a glued record again: the phrase the rule gives its args.

    Raises AssertionError when the glued phrase is not that one.
    """
    data = json.loads(record)
    phrases = {
        (tuple(k) if isinstance(k, list) else k): text
        for k, text in data["phrases"]
    }
    _, expected = decide(data["rule"], data["args"], phrases)
    assert phrase == expected, (
        f"glued {phrase!r}, but rule {data['rule']} on {data['args']} "
        f"gives {expected!r}"
    )
    return expected
