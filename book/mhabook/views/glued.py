"""Glue a verdict's phrase into the page (myst-nb), with its record."""

from myst_nb import glue

from ..experiments.verdicts import record


def verdict(name, rule, args, phrases):
    """Decide `rule` on `args`, glue its phrase as `name`; return the outcome.

    `phrases` maps each outcome of the rule to the words the text shows;
    the decision's record is glued as `<name>__verdict` for the tests.
    """
    outcome, phrase, data = record(rule, args, phrases)
    glue(name, phrase, display=False)
    glue(f"{name}__verdict", data, display=False)
    return outcome
