"""The gallery of section 4: one attention map per job, on one input."""

import html

import matplotlib.pyplot as plt
import numpy as np

from ..experiments.jobs import (
    BELOW,
    DISTANCE_JOBS,
    MIRROR,
    PARKING,
    determiner_noun,
)
from .sharing import markdown_table


def _grid(n, columns, top, per_row):
    """(fig, axes): a column-wide grid of n shared-axis maps, `columns`
    a row, `per_row` inches tall each, plus `top` inches for titles."""
    rows = -(-n // columns)  # ceil
    return plt.subplots(
        rows,
        columns,
        figsize=(4.8, top + per_row * rows),
        sharex=True,
        sharey=True,
        layout="constrained",
        squeeze=False,
    )


def figure(
    attention, tokens, jobs, targets, columns=2, per_row=2.0, model=None
):
    """Small multiples: for each job, its best head's attention map on one
    input, with the job's targets marked by dots. Returns the Figure.

    attention: (L, h, T, T) weights of that input; tokens: its T tokens;
    jobs: `Job`s (name, layer, head); targets: one (T, T) bool per job;
    `columns` maps a row, each row `per_row` inches tall; `model`, if
    given, the name of the model the weights come from, as a title.
    """
    T = len(tokens)
    if tuple(attention.shape[-2:]) != (T, T):
        raise ValueError(
            f"{T} tokens need (L, h, {T}, {T}) weights, got "
            f"{tuple(attention.shape)}"
        )
    if len(jobs) != len(targets):
        raise ValueError(
            f"{len(jobs)} jobs but {len(targets)} target maps: give one "
            f"(T, T) map per job"
        )
    fig, axes = _grid(len(jobs), columns, 0.35 + 0.3 * bool(model), per_row)
    if model:
        fig.suptitle(f"in {model}", fontsize=9)
    for ax, job, mark in zip(axes.flat, jobs, targets):
        weights = attention[job.layer, job.head].detach().cpu().numpy()
        ax.imshow(weights, vmin=0, vmax=1, cmap="Greys")
        i, j = np.nonzero(np.asarray(mark))
        ax.scatter(j, i, s=7, color="#D55E00", linewidths=0)
        ax.set_title(
            f"{job.name}\nlayer {job.layer}, head {job.head}"
            + ("" if job.does_job else f", {BELOW}"),
            fontsize=9,
        )
        ax.set_xticks(range(T), tokens, rotation=90, fontsize=9)
        ax.set_yticks(range(T), tokens, fontsize=9)
        ax.tick_params(length=0)
        ax.spines[:].set_visible(False)
    for ax in axes.flat[len(jobs) :]:
        ax.axis("off")
        ax.text(
            0.0,
            0.5,
            "rows: query\ncolumns: key\ndarker: more weight\n"
            "orange dots: the job's\ntargets",
            fontsize=9,
            va="center",
            transform=ax.transAxes,
        )
    return fig


def grammar_figure(study, model=None):
    """`figure` of the grammar head (`study.grammar`, a `RealHeads`) on
    `study.grammar_example`, a held-out sentence, its noun marked."""
    ex = study.grammar_example
    marks = [determiner_noun(ex)]
    attention, tokens = ex["attention"], ex["tokens"]
    return figure(attention, tokens, [study.grammar], marks, 1, 3.6, model)


def verdict(job):
    """'yes', 'partly' or 'no': whether a `Job`'s best head does it, held
    out. 'yes': the low end of its interval clears `Job.bar`; 'partly': it
    beats both baselines but not the bar."""
    if job.does_job:
        return "yes"
    return "partly" if job.beats_baselines else "no"


# `verdict` as the detail table prints it, under "clears the bar?": a
# head above both baselines but not the bar does not clear it.
DOES = {"yes": "yes", "partly": "no; above both baselines"}
DOES["no"] = "no"
# A job whose best head does it while the median head scores at least
# half as much (`Job.common`): no specialist, as the detail table says.
COMMON = "many heads look there too"


def _placed(job):
    """Whether a rule of place alone applies to `job`: not [CLS] or [SEP],
    which name a token, not a distance, nor a job with no `place`."""
    return job.name not in PARKING and not np.isnan(job.place)


def _distance(job):
    """The compact table's fixed-distance cell: the score of the best
    rule of place alone and its distance ("1.00 (1 back)"), or "n/a"
    where none applies (`_placed`)."""
    if not _placed(job):
        return "n/a"
    d = job.distance
    if d == MIRROR:
        rule = MIRROR
    else:
        rule = f"{abs(d)} {'back' if d < 0 else 'on'}" if d else "itself"
    return f"{job.place:.2f} ({rule})"


# Whether a head's score beats the best fixed distance's: its interval
# against that one number (`verdicts.compare`), as a clause.
VS_PLACE = {
    "more": "the head beats place alone",
    "same": "too close to tell from place alone",
    "less": "place alone does better than this head",
}


def table(jobs, detail=False):
    """The gallery as a Markdown table, one row per job: its best head and
    that head's held-out score beside its baselines, an even spread and
    the median head, and the best fixed distance (`_distance`).
    detail=True gives instead the score's 95% interval,
    the job's bar, whether the head clears it (`verdict`, in `DOES`'
    words), the head's hit rate (`Job.hits`), what the best fixed
    distance scores (`jobs.fixed_distance`: left out for `PARKING`'s jobs,
    which name a token, not a distance, and marked for
    `DISTANCE_JOBS`,
    which are one), and whether the hit rate beats it (`PLACE_BEATEN`;
    a rule of place scores 1 at a job that is one)."""
    header = ["job", "best head (layer, head)", "held-out score"]
    header += ["even spread", "median head", "fixed distance"]
    if detail:
        header = ["job", "held-out score (95% interval)", "bar"]
        header += ["clears the bar?", "hit rate (95% interval)"]
        header += ["fixed distance", "hit rate beats it?"]
    rows = []
    for job in jobs:
        name = html.escape(job.name)
        if job.inputs != "sentences":
            name += f" (on {html.escape(job.inputs)})"
        where = f"{job.place:.2f}"
        fixed = job.name in PARKING + DISTANCE_JOBS  # place alone does it
        parked = job.name in PARKING  # no distance reaches every [SEP]
        if parked:  # the job names a token, wherever it stands
            where = "n/a: a token, not a distance"
        elif fixed:  # the job is a fixed distance
            where += ": the job itself"
        elif job.distance == MIRROR:  # on pairs: as far into the other
            where += f": {MIRROR}"
        if detail:
            does = DOES[verdict(job)]
            if job.does_job and job.common:  # the median head looks there
                does += f"; {COMMON}"
            score = f"{job.held_out:.3f} ({job.low:.3f}–{job.high:.3f})"
            hits = f"{job.hits:.2f} ({job.hits_low:.2f}–{job.hits_high:.2f})"
            beats = "–"  # a Job made without hit rates
            if parked:
                beats = "n/a"
            elif not np.isnan([job.hits_low, job.place]).any():
                beats = PLACE_BEATEN[job.hits_vs_place]
            row = [name, score, f"{job.bar:.2f}", does, hits, where]
            rows.append(row + [beats])
        else:
            rows.append(
                [
                    name,
                    f"{job.layer}, {job.head}",
                    f"{job.held_out:.2f}",
                    f"{job.even:.2f}",
                    f"{job.median:.2f}",
                    _distance(job),
                ]
            )
    return markdown_table(header, rows)


# Whether a head's hit rate beats the best fixed distance's: its interval
# against that one number (`verdicts.compare`).
PLACE_BEATEN = {"more": "yes", "same": "too close to tell", "less": "no"}


def exercise_words(job, prefix="mine"):
    """{glue name: words}: whether a `Job`'s held-out score beats the best
    fixed distance's (`Job.share_vs_place`, in `VS_PLACE`' words)."""
    return {f"{prefix}_vs_place": VS_PLACE[job.share_vs_place]}


def picture_table(flies, swapped, rival=True):
    """Head 8's checks as a Markdown table: for the head chosen on the even
    pairs (`flies`) and on the odd (`swapped`), whether the source's
    pattern holds held out, and, with `rival`, whether "flies" in A favours
    its target over the word just before it (`realheads.FliesTest`)."""
    pattern = {True: "yes", False: "no"}
    wins = {"more": "yes", "less": "no: the word before wins"}
    wins["same"] = "too close to tell"
    header = [
        "checked on the held-out pairs",
        f"layer {flies.layer}, head {flies.head}, chosen on the even pairs",
        f"layer {swapped.layer}, head {swapped.head}, chosen on the odd pairs",
    ]
    rows = [
        ["the pattern: score (95% interval), bar 1"]
        + [
            f"{pattern[t.pattern_holds]}: {t.score.mean:.2f} "
            f"({t.score.low:.2f} to {t.score.high:.2f})"
            for t in (flies, swapped)
        ]
    ]
    if rival:  # A's target minus the word before, in lift
        rows.append(
            ['A\'s target gets more than the word before "flies"']
            + [
                f"{wins[t.target_wins]}: {t.rival_subject.mean:+.2f} "
                f"({t.rival_subject.low:+.2f} to {t.rival_subject.high:+.2f})"
                for t in (flies, swapped)
            ]
        )
    return markdown_table(header, rows)


def source_answers(study):
    """Section 4's account of the head closest to the source's "flies"
    picture (`study`, a `RealHeads`), by glue name: the sentence that
    "flies" in A looks at most on the source's pair, in layer 0."""
    side = SIDES[study.source_top_sides[0] == "B"]
    return {"flies_top_side": side}


SIDES = {True: "in sentence B", False: "in sentence A"}
# Whether the query picture reads the head of "And head 8?"; and whether
# the two "flies", each read alone, get one query at layer 0 (they do
# wherever the word stands at the same place in both sentences).
WHICH = {True: "the head of section 4.4", False: "another head"}
SAME_QUERY = {True: "the same query"}
SAME_QUERY[False] = "queries that differ by place alone"
# For how many of the two choices of head a check holds (".. wins whichever
# half chooses the head"): `how_many` on a count of 2 (`realheads.checks_won`).
BEFORE = {"none": "in neither half", "some": "in one half only"}
BEFORE["all"] = "whichever half chooses the head"
BEFORE["most"] = BEFORE["some"]  # 1 of 2

# Whether the grammar head finds the noun (its top token) for more
# determiners than the best fixed distance does.
PLACE = {True: "No fixed distance finds nouns as often"}
PLACE[False] = "A fixed distance finds nouns as often"


# Whether other words whose next noun is the same (the words between, the
# word just before the determiner) weight the noun as much as the grammar
# head's determiners do: above the low end of its held-out interval.
RIVAL = {True: "Other words look at it as much"}
RIVAL[False] = "The determiner looks at it most"
# Whether the words before the noun (between, and just before the
# determiner) still give it at least twice an even share: a head that does
# the job in part by looking ahead to the next noun.
AHEAD = {
    True: "The head partly looks ahead",
    False: "The head hardly looks ahead",
}
# Whether the token just past the noun gets at least half the noun's share
# of the determiner's attention: a head that looked a few tokens ahead would.
AFTER = {True: "The head may just look ahead"}
AFTER[False] = "The head stops at the noun"


# The grammar head's held-out share against the best fixed distance's
# (`Job.share_vs_place`), for section 4's `sec-grammar-head`, after its
# hit rate against the best fixed distance's.
SHARE_BOX = {
    "more": "the head beats that rule",
    "same": "the head only ties that rule",
    "less": "that rule beats the head",
}


# Whether the weak pattern (each target above an even share, and above
# what the other "flies" gives it) holds, held out, for the head of section
# 4's `sec-head-8` (`FliesTest.pattern_holds`), and with sentence B a copy
# of A (its copy control).
HOLDS = {True: "holds", False: "does not hold"}


# The view's head at its job, held out, against the best fixed distance
# (`Job.against_place`), for the box of real_heads; the [CLS] and [SEP]
# jobs name a token, not a distance (the table's "n/a").
FIXED = {
    "more": "it beats the best fixed-distance rule",
    "same": "a fixed-distance rule does as well",
    "less": "a fixed-distance rule does better",
}
NO_FIXED = dict.fromkeys(FIXED, "no fixed distance applies")


# Which model the page reads: the bundled one or another.
MODEL = {True: "a sentence encoder, not the source's BERT-base"}
MODEL[False] = "the loaded model"


def page_verdicts(study, first, checkpoint):
    """[(name, rule, args, phrases), ...]: each verdict real_heads glues,
    for `study` (a `RealHeads`) with the head view opened on `first`, and
    `checkpoint` (a `Checkpoint`) the model it read."""
    done = study.jobs_done
    count = f"{done} {'has' if done == 1 else 'have'}"
    have = {"none": "none has", "some": count, "most": count}
    have["all"] = "each has"
    look = {True: "mostly", False: "only in part"}
    k, n = study.jobs_beyond, len(study.word_jobs)  # heads beyond place
    beyond = {"none": "no head here beats its fixed distance"}
    beyond["all"] = "every head here beats its fixed distance"
    beyond["some"] = f"{k} of {n} heads beat their fixed distance"
    beyond["most"] = beyond["some"]
    grammar, top = study.grammar, study.grammar_numbers()
    held = int(study.flies.pattern_holds)  # the test of sec-head-8
    copied = int(study.copy_control.pattern_holds)  # with B a copy of A
    # on the source's pair, does "flies" in A weight its target most?
    on_target = int(study.source_top_at[0] == study.source_targets[0])
    placed = _placed(first)  # a rule of place alone applies to its job
    # as the table prints them (0.999 reads 1.00, as does the rule's 1.00)
    printed = tuple(round(x, 2) for x in first.against_place)
    return [
        ("model_phrase", "above", (int(checkpoint.is_bundled), 0), MODEL),
        ("jobs_done", "how_many", (done, len(study.word_jobs)), have),
        ("jobs_beyond", "how_many", (k, n), beyond),
        (
            "grammar_place",  # determiners whose noun is its top token
            "above",
            (top["grammar_top"], top["grammar_by_place"]),
            PLACE,
        ),
        (
            "grammar_rival_side",  # the words whose next noun it is too
            "above",
            (
                max(study.grammar_between, study.grammar_before),
                grammar.low,
            ),
            RIVAL,
        ),
        (
            "grammar_ahead",
            "above",
            (top["grammar_ahead_ratio"], 2),  # twice an even share
            AHEAD,
        ),
        (
            "grammar_after_side",
            "above",
            (study.grammar_after, grammar.held_out / 2),
            AFTER,
        ),
        ("grammar_share_box", "compare", grammar.against_place, SHARE_BOX),
        ("first_look", "above", (study.on_pair(first), 0.5), look),
        (
            "first_place",  # the view's head against place alone
            "compare",
            printed if placed else (0, 0, 0, 0),
            FIXED if placed else NO_FIXED,
        ),
        (
            "flies_top_match",  # on the source's pair: A's target on top?
            "above",
            (on_target, 0),
            {True: "sentence A's target", False: "not sentence A's target"},
        ),
        ("flies_draws", "above", (held, 0), HOLDS),  # held out
        ("copy_passes", "above", (copied, 0), HOLDS),  # B a copy of A
        (
            "copy_means",  # what the copy control says of the result
            "above",
            (copied, 0),
            {
                True: "B's own words are not needed",
                False: "B's own words may matter",
            },
        ),
    ]
