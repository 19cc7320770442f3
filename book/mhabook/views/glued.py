"""Glue a verdict's phrase into the page (myst-nb), with its record."""

from myst_nb import glue

from ..experiments.verdicts import record


def verdict(name, rule, args, phrases):
    """Decide `rule` on `args`, glue its phrase as `name`; return the outcome.

    `phrases` maps each outcome of the rule to the words the text shows;
    the decision's record is glued as `<name>__verdict` for the tests.
    "all_above" over no values is refused: its phrase would claim
    something ("at every step") of nothing.
    """
    if rule == "all_above" and len(args[0]) == 0:
        raise ValueError(
            f"verdict {name!r}: all_above got no values, so neither of its "
            f"phrases would be true: give it at least one value, or leave "
            f"the sentence out when there is nothing to compare"
        )
    outcome, phrase, data = record(rule, args, phrases)
    glue(name, phrase, display=False)
    glue(f"{name}__verdict", data, display=False)
    return outcome


def glue_all(**values):
    """Glue each value under its keyword's name, for the text to show
    (`glue(name, value, display=False)` for each)."""
    for name, value in values.items():
        glue(name, value, display=False)
