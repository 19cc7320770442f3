"""Section 4's gallery: jobs, scores and the chosen heads, on planted heads.

Each example's attention is set by hand: a head built to do a job (all of
a word's weight on its target) among heads that spread evenly, so that
the right answer is known.
"""

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from mhabook.experiments import jobs
from mhabook.views import gallery

TOKENS = ["[CLS]", "time", "flies", "like", "[SEP]", "fruit", "flies", "[SEP]"]
SEGMENTS = torch.tensor([0, 0, 0, 0, 0, 1, 1, 1])
T, L, H = len(TOKENS), 2, 3
PLANTED = (1, 2)  # layer 1, head 2 does the previous-word job


def example(planted=True):
    attention = torch.full((L, H, T, T), 1 / T)
    if planted:
        targets = jobs.previous_word(bare())
        rows = targets.any(-1)
        attention[PLANTED][rows] = targets[rows].float()
    return {**bare(), "attention": attention}


def bare():
    return {
        "tokens": TOKENS,
        "segments": SEGMENTS,
        "special": torch.tensor([0, 4, 7]),
    }


def test_each_job_marks_its_targets():
    ex = bare()
    previous = jobs.previous_word(ex).nonzero().tolist()
    # "time" and "fruit" open their sentences: they have no previous word
    assert previous == [[2, 1], [3, 2], [6, 5]]
    assert jobs.next_word(ex).nonzero().tolist() == [[1, 2], [2, 3], [5, 6]]
    to_sep = jobs.special_token("[SEP]")(ex)
    assert to_sep[2].nonzero().flatten().tolist() == [4, 7]
    assert not to_sep[0].any()  # [CLS] is not a word: it has no target
    same = jobs.same_word_other_sentence(ex).nonzero().tolist()
    assert same == [[2, 6], [6, 2]]  # "flies" and "flies"


def test_a_planted_head_scores_one_and_an_even_head_the_even_share():
    scores, even = jobs.job_shares([example()], jobs.previous_word)
    assert scores.shape == (1, L, H)
    assert scores[0][PLANTED] == pytest.approx(1.0)
    assert scores[0, 0, 0] == pytest.approx(1 / T)
    assert even[0] == pytest.approx(1 / T)


def test_the_gallery_finds_the_planted_head_and_only_its_job():
    found = {job.name: job for job in jobs.gallery([example()] * 4)}
    previous = found["previous word"]
    assert (previous.layer, previous.head) == PLANTED
    assert previous.held_out == pytest.approx(1.0)
    assert previous.does_job
    assert not found["next word"].does_job
    assert not found["[SEP]"].does_job


def test_without_the_planted_head_no_head_does_the_job():
    (previous,) = jobs.gallery(
        [example(planted=False)] * 4, {"previous word": jobs.previous_word}
    )
    assert not previous.does_job
    assert previous.held_out == pytest.approx(previous.even)


def test_the_bar_rises_with_the_higher_baseline():
    job = job_at(0.6, 0.1, 0.5)  # the median head is the higher baseline
    assert job.base == 0.5 and job.bar == pytest.approx(0.75)
    assert not job.does_job and job.beats_baselines
    assert not dataclasses.replace(job, even=0.7).beats_baselines


def test_a_fixed_distance_is_chosen_on_one_half_and_scored_on_the_other():
    # "flies" (2) looks at "like" (3) in the first sentence, at "fruit" (5)
    # from "flies" (6) in the second: distances +1 and -1, one each
    def job(ex):
        targets = torch.zeros(T, T, dtype=torch.bool)
        targets[2, ex["to"]] = targets[6, 5] = True
        return targets

    back = {**bare(), "to": 1}  # -1 for both query words: all hit
    ahead = {**bare(), "to": 3}  # +1 and -1: half hit by either
    assert jobs.fixed_distance([back, ahead], job) == (-1, 0.5)
    assert jobs.fixed_distance([back, back], job) == (-1, 1.0)
    # chosen on the odd examples, scored on the even
    assert jobs.fixed_distance([back, ahead], job, "odd") == (-1, 1.0)
    # a tie between -1 and +1 on the choosing half goes to the nearer,
    # then the smaller: -1
    assert jobs.fixed_distance([ahead, back], job)[0] == -1
    # a planted head is scored beside it, the same way
    (found,) = jobs.gallery([example()] * 4, {"p": jobs.previous_word})
    assert (found.distance, found.place) == (-1, 1.0)
    (found,) = jobs.gallery([example()] * 4, {"[SEP]": jobs.JOBS["[SEP]"]})
    assert found.place < 1  # no one distance reaches every [SEP]


def test_on_pairs_the_same_place_in_the_other_sentence_competes():
    # "flies" stands second in both sentences: 2 -> 6 is +4 and 6 -> 2 is
    # -4, and each is as far into the other sentence as into its own
    job = jobs.same_word_other_sentence
    assert jobs.fixed_distance([bare()] * 2, job) == (jobs.MIRROR, 1.0)
    # B one token later: "flies" opens it, so no place matches; the two
    # distances tie and the nearer, then the smaller, is kept
    later = {**bare(), "segments": torch.tensor([0, 0, 0, 0, 0, 0, 1, 1])}
    assert jobs.fixed_distance([later] * 2, job) == (-4, 0.5)
    # the table names the rule that won
    found = dataclasses.replace(job_at(0.3, 0.1, 0.05), name="same word")
    found = dataclasses.replace(found, place=0.47, distance=jobs.MIRROR)
    assert f"0.47: {jobs.MIRROR}" in gallery.table([found], True).data
    # the compact table gives place alone's score beside the head's
    mirror = f"| 0.35 | 0.10 | 0.05 | 0.47 ({jobs.MIRROR}) |"
    assert gallery.table([found]).data.endswith(mirror)
    # as printed: 0.684 shows as 0.68
    noun = dataclasses.replace(job_at(0.6, 0.1, 0.05), name=jobs.GRAMMAR)
    tied = dataclasses.replace(noun, place=0.684, distance=3)
    assert gallery.table([tied]).data.endswith("| 0.68 (3 on) |")
    # a job that is itself a fixed distance: that distance scores 1.00
    nxt = dataclasses.replace(job_at(0.65, 0.13, 0.07), name="next word")
    nxt = dataclasses.replace(nxt, place=1.0, distance=1)
    assert gallery.table([nxt]).data.endswith("| 1.00 (1 on) |")
    back = dataclasses.replace(nxt, distance=-3, place=0.684)
    assert gallery.table([back]).data.endswith("| 0.68 (3 back) |")
    # a reader's job whose targets include the word itself: distance 0
    itself = dataclasses.replace(nxt, distance=0, place=0.5)
    assert gallery.table([itself]).data.endswith("| 0.50 (itself) |")
    # [CLS] and [SEP] stand in fixed places: no distance
    parked = dataclasses.replace(nxt, name="[SEP]")
    assert gallery.table([parked]).data.endswith("| 0.07 | n/a |")


def test_the_detail_table_flags_a_job_many_heads_do():
    common = dataclasses.replace(job_at(0.8, 0.1, 0.45), name="[CLS]")
    assert common.does_job and common.common  # the median head: 0.45
    many = "| yes; many heads look there too |"
    assert many in gallery.table([common], detail=True).data
    rare = dataclasses.replace(common, median=0.05)  # a specialist
    assert "| yes |" in gallery.table([rare], detail=True).data
    # the best head at a job it does not do is flagged, in table and figure
    weak = dataclasses.replace(rare, name="[SEP]", held_out=0.3, low=0.25)
    assert not weak.does_job
    partly = "| no; above both baselines |"
    assert partly in gallery.table([weak], detail=True).data
    fig = gallery.figure(
        example()["attention"], TOKENS, [weak], [jobs.previous_word(bare())]
    )
    assert fig.axes[0].get_title().endswith(", not clearly done")


def test_a_job_with_no_targets_is_a_clear_error():
    def nothing(ex):
        return torch.zeros(T, T, dtype=torch.bool)

    with pytest.raises(ValueError, match="add sentences where the job"):
        jobs.best_at([example()] * 4, nothing)


def job_at(low, even, median):
    """A `Job` whose held-out interval starts at `low`."""
    return jobs.Job("x", 0, 0, low + 0.05, low, low + 0.1, even, median, 8)


def test_a_job_done_closes_half_the_gap_from_the_higher_baseline_to_1():
    assert jobs.CLEAR == 0.5
    assert job_at(0.6, 0.1, 0.1).does_job  # bar 0.55
    assert job_at(0.6, 0.1, 0.1).bar == pytest.approx(0.55)
    assert not job_at(0.25, 0.13, 0.07).does_job  # twice both: not enough
    assert not job_at(0.5, 0.1, 0.1).does_job  # under its bar, 0.55
    # a job most heads already do can still be done: bar 0.765 < 1
    assert job_at(0.88, 0.13, 0.53).bar == pytest.approx(0.765)
    assert job_at(0.88, 0.13, 0.53).does_job
    assert not job_at(0.7, 0.13, 0.53).does_job


@pytest.mark.parametrize("median", [0.0, 0.3, 0.53, 0.6, 0.9, 0.99])
def test_the_bar_is_reachable_for_any_baseline_under_1(median):
    bar = job_at(0.0, 0.05, median).bar
    assert max(0.05, median) < bar < 1
    assert job_at(min(1.0, bar + 1e-3), 0.05, median).does_job
    assert not job_at(median, 0.05, median).does_job  # at the baseline


def planted_job(median_share, head_share, n=8):
    """Examples in which every head of layer 0 but one puts `median_share`
    of each word's attention on [CLS], and head 0 of layer 1 puts
    `head_share`; the rest of each row spreads evenly over the others."""
    examples = []
    for _ in range(n):
        ex = bare()
        cls = torch.tensor([t == "[CLS]" for t in TOKENS])
        attention = torch.empty(L, H, T, T)
        for layer in range(L):
            for head in range(H):
                share = head_share if (layer, head) == (1, 0) else median_share
                attention[layer, head] = (1 - share) / (T - 1)
                attention[layer, head][:, cls] = share
        examples.append({**ex, "attention": attention})
    return examples


def test_planted_heads_a_job_most_heads_do_can_be_done_clearly():
    cls_job = {"[CLS]": jobs.JOBS["[CLS]"]}
    (done,) = jobs.gallery(planted_job(0.6, 0.95), cls_job)
    assert (done.layer, done.head) == (1, 0)
    assert done.median == pytest.approx(0.6)  # most heads do the job
    assert done.held_out == pytest.approx(0.95)
    assert done.does_job  # bar 0.8
    (weak,) = jobs.gallery(planted_job(0.6, 0.7), cls_job)
    assert (weak.layer, weak.head) == (1, 0)
    assert not weak.does_job  # above the median head, short of 0.8
    (flat,) = jobs.gallery(planted_job(0.6, 0.6), cls_job)
    assert flat.held_out == pytest.approx(flat.median)
    assert not flat.does_job  # a head at the baseline


def test_choose_on_odd_chooses_on_the_odd_examples_and_scores_the_even(
    capsys,
):
    examples = [example() for _ in range(6)]  # PLANTED does the job
    for ex in examples[1::2]:  # in the odd rows, head 0 of layer 0 does
        ex["attention"][0, 0] = ex["attention"][PLANTED]
        ex["attention"][PLANTED] = 1 / T
    even = jobs.best_at(examples, jobs.previous_word)
    assert (even.layer, even.head) == PLANTED
    assert even.name == "previous word"  # the table's row names the job
    assert even.held_out == pytest.approx(1 / T)  # scored on the odd rows
    odd = jobs.best_at(examples, jobs.previous_word, choose_on="odd")
    assert (odd.layer, odd.head) == (0, 0)
    assert odd.held_out == pytest.approx(1 / T)  # scored on the even rows
    assert odd.n_examples == 3
    rough = "Note: only 3 held-out inputs: interval rough"
    assert rough in capsys.readouterr().out  # too few for a 95% interval
    with pytest.raises(ValueError, match="'even' or 'odd'"):
        jobs.best_at(examples, jobs.previous_word, choose_on="first")


def test_the_figure_and_table_show_each_job():
    found = jobs.gallery([example()] * 4)
    targets = [job(bare()) for job in jobs.JOBS.values()]
    fig = gallery.figure(example()["attention"], TOKENS, found, targets)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles[0] == "previous word\nlayer 1, head 2"
    assert len(titles) == len(found)
    found[2].inputs = "pairs"
    rows = gallery.table(found).data.splitlines()
    assert len(rows) == 2 + len(found)
    # the compact table: the best fixed distance, here the job's own,
    # beside the head
    back = "1.00 (1 back)"
    assert rows[2] == f"| previous word | 1, 2 | 1.00 | 0.12 | 0.12 | {back} |"
    assert rows[0].endswith(
        "| best head (layer, head) | held-out score | even spread | "
        "median head | fixed distance |"
    )
    assert rows[4].startswith("| same word, other sentence (on pairs) ")
    detail = gallery.table(found, detail=True).data.splitlines()
    # previous and next word are a fixed distance: the job is one, and
    # that rule hits every target
    tie = "| 1.00: the job itself | too close to tell |"
    assert tie in detail[2]
    missing = dataclasses.replace(found[0], hits_low=0.76, hits_high=0.87)
    below = gallery.table([missing], detail=True).data
    assert below.endswith("| 1.00: the job itself | no |")
    # [CLS] and [SEP] name a token, not a distance: no fixed distance beside
    fixed = "| n/a: a token, not a distance |"
    parked = [row.endswith(fixed + " n/a |") for row in detail[2:]]
    assert parked == [False, False, False, True, True]
    assert detail[5].endswith(fixed + " n/a |")  # the [CLS] row
    assert detail[0].endswith(
        "| bar | clears the bar? | hit rate (95% interval) | fixed distance "
        "| hit rate beats it? |"
    )
    # the planted head hits every target, as the previous token does
    assert detail[2] == (
        "| previous word | 1.000 (1.000–1.000) | 0.56 | yes "
        "| 1.00 (1.00–1.00) | 1.00: the job itself | too close to tell |"
    )
    assert "| 0.56 | no |" in detail[3]
    beyond = dataclasses.replace(found[0], hits_low=0.9, place=0.5)
    beyond.name = "mine"  # a job of one's own, not one of DISTANCE_JOBS
    assert gallery.table([beyond], detail=True).data.endswith("| yes |")
    # the exercise's solution: the held-out score against place
    assert beyond.against_place == (beyond.low, beyond.high, 0.5, 0.5)
    no_hits = dataclasses.replace(beyond, hits_low=float("nan"))
    assert gallery.table([no_hits], detail=True).data.endswith("| – |")
    words = gallery.exercise_words(beyond)
    assert words == {"mine_vs_place": "the head beats place alone"}
    tied = dataclasses.replace(beyond, place=1.0)  # its interval reaches 1
    assert gallery.exercise_words(tied, "it") == {
        "it_vs_place": "too close to tell from place alone"
    }
    below = dataclasses.replace(beyond, hits_low=0.3, hits_high=0.4, place=0.5)
    assert gallery.table([below], detail=True).data.endswith("| no |")
    lower = dataclasses.replace(below, low=0.2, high=0.3)  # its share too
    place = gallery.exercise_words(lower, "it")["it_vs_place"]
    assert place == "place alone does better than this head"

    def does(job):  # the "clears the bar?" column of its row in the detail
        return gallery.table([job], detail=True).data.splitlines()[2]

    # many heads lean the same way: the best one does it, but commonly
    lean = dataclasses.replace(found[0], held_out=0.9, low=0.85, median=0.6)
    assert lean.does_job and lean.common and not found[0].common
    assert "| yes; many heads look there too |" in does(lean)
    # above both baselines, but short of the bar: the job done in part
    part = dataclasses.replace(found[0], held_out=0.3, low=0.25, median=0.03)
    assert part.beats_baselines and not part.does_job
    assert "| no; above both baselines |" in does(part)
    # a score over the bar whose interval reaches below it: still in part
    near = dataclasses.replace(part, held_out=part.bar + 0.01)
    assert near.beats_baselines and not near.does_job
    assert "| no; above both baselines |" in does(near)
    # under a baseline: not done
    none = dataclasses.replace(part, low=0.02)
    assert "| 0.56 | no |" in does(none)
    with pytest.raises(ValueError, match="one \\(T, T\\) map per job"):
        gallery.figure(example()["attention"], TOKENS, found, targets[:2])


def flies_test(score_low, contrast_low=0.5, rival_low=-0.3, head=0):
    """A `FliesTest` whose pattern margins are score_low - 1 and
    contrast_low twice (it passes when all three are above 0), and whose
    A's target minus the word before runs from rival_low to + 0.2."""
    from mhabook.experiments.realheads import Estimate, FliesTest

    def at(low):
        return Estimate(torch.tensor([low + 0.1]), low, low + 0.2)

    contrasts = at(contrast_low), at(0.5)
    return FliesTest(
        0, head, 1.0, at(score_low), *contrasts, at(0), at(0), at(rival_low)
    )


def test_head8_counts_count_the_halves_that_hold_each_row_of_the_table():
    from mhabook.experiments.realheads import head8_counts

    def counts(forward, swapped):
        return head8_counts((forward, swapped))

    # the pattern on each half (score and contrasts); the word before
    # beats A's target where the interval lies below 0 (-0.3 to -0.1)
    assert counts(flies_test(1.1), flies_test(1.2)) == (2, 2)
    assert counts(flies_test(1.1), flies_test(0.97)) == (1, 2)  # under 1
    assert counts(flies_test(0.97), flies_test(1.1)) == (1, 2)  # either
    assert counts(flies_test(1.1, -0.1), flies_test(1.2)) == (1, 2)
    assert counts(flies_test(0.9), flies_test(1.0)) == (0, 2)  # not above
    holds_zero = flies_test(1.1, rival_low=-0.1)  # -0.1 to 0.1
    assert counts(holds_zero, flies_test(1.1, rival_low=0.1)) == (2, 0)
    assert counts(holds_zero, flies_test(1.1)) == (2, 1)


def test_the_picture_table_says_yes_no_or_cannot_tell_for_each_choice():
    even = flies_test(1.1, rival_low=0.1, head=3)
    odd = flies_test(0.9, rival_low=-0.5, head=5)
    rows = gallery.picture_table(even, odd).data.splitlines()
    assert "layer 0, head 3, chosen on the even pairs" in rows[0]
    assert "layer 0, head 5, chosen on the odd pairs" in rows[0]
    assert rows[2] == (
        "| the pattern: score (95% interval), bar 1 "
        "| yes: 1.20 (1.10 to 1.30) | no: 1.00 (0.90 to 1.10) |"
    )
    assert rows[3].endswith(
        "| yes: +0.20 (+0.10 to +0.30) "
        "| no: the word before wins: -0.40 (-0.50 to -0.30) |"
    )
    unclear = flies_test(1.1, rival_low=-0.1)
    rows = gallery.picture_table(unclear, unclear).data.splitlines()
    assert rows[3].count("| too close to tell: +0.00 (-0.10 to +0.10)") == 2
    assert (
        len(gallery.picture_table(even, odd, rival=False).data.splitlines())
        == 3
    )


def test_a_label_marks_a_best_head_that_misses_its_bar():
    done = jobs.Job("[CLS]", 4, 5, 0.99, 0.98, 1.0, 0.1, 0.1, 10)
    below = dataclasses.replace(done, name="[SEP]", low=0.2, head=11)
    assert done.label == "[CLS]: layer 4, head 5"
    assert below.label == "[SEP] (not clearly done): layer 4, head 11"


def test_jobs_done_counts_word_jobs_and_leaves_out_parking():
    names = [f.name for f in dataclasses.fields(jobs.RealHeads)]
    study = jobs.RealHeads(**dict.fromkeys(names))
    done = jobs.Job("[CLS]", 0, 0, 0.99, 0.98, 1.0, 0.1, 0.1, 10)
    not_done = jobs.Job("next word", 0, 1, 0.2, 0.1, 0.3, 0.1, 0.1, 10)
    assert done.does_job and not not_done.does_job
    grammar = dataclasses.replace(not_done, name=jobs.GRAMMAR)
    study.jobs, study.grammar = [not_done, done], grammar
    assert study.jobs_done == 0  # a [CLS] head is parking, not a job
    study.jobs = [dataclasses.replace(done, name="next word"), done]
    assert study.jobs_done == 1
    study.grammar = dataclasses.replace(done, name=jobs.GRAMMAR)
    assert study.jobs_done == 2  # the grammar job is a word job
    assert study.jobs_beyond == 0  # no place score: nan beats nothing
    study.grammar = dataclasses.replace(study.grammar, place=0.9)
    assert study.jobs_beyond == 1  # 0.98, its low end, above place
    study.jobs[0] = dataclasses.replace(study.jobs[0], place=1.0)
    assert study.jobs_beyond == 1  # next word: a fixed distance scores 1
    names = ["next word", jobs.GRAMMAR]
    assert [job.name for job in study.word_jobs] == names
    assert study.job("[CLS]") is done
    assert study.job(jobs.GRAMMAR) is study.grammar
    with pytest.raises(
        ValueError, match="use one of 'next word', '\\[CLS\\]', 'det"
    ):
        study.job("previous word")


def test_the_study_runs_on_a_random_bert_and_finds_no_job_there(tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from mhabook.experiments import realheads as rh
    from tiny import save_random_bert

    folder = save_random_bert(tmp_path, layers=2, heads=2, hidden=16)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    text_a, text_b = "time flies like an arrow", "fruit flies"
    study = jobs.real_heads_results(model.eval(), tokenizer, text_a, text_b)
    assert study.attention.shape[:2] == (2, 2)
    assert study.jobs_done == 0
    assert study.largest_difference < 1e-4
    flies, swapped = study.flies, study.swapped
    assert len(flies.score.values) > 0
    # the two choices are tested on different halves of the pairs
    assert len(flies.score.values) + len(swapped.score.values) == (
        study.n_flies
    )
    # the grammar job reads the noun phrases, one target per sentence
    assert study.grammar.name == jobs.GRAMMAR
    assert study.grammar.inputs == "one noun-phrase template"
    assert len(study.phrases) == len(rh.load_table(rh.SETS["phrases"]))
    rows = study.grammar_rows
    assert len(rows) == len(study.phrases[1::2])  # held out: the odd rows
    ex = study.phrases[1]
    (first, last), share = ex["phrases"][0], rows[0][1]
    weights = ex["attention"][study.grammar.layer, study.grammar.head]
    assert rows[0][0] == last - first - 1 and share == weights[first, last]
    shown = study.grammar_example  # held out, with no unmarked determiner
    held = study.phrases[1::2]
    dets = [sum(t in jobs.DETERMINERS for t in e["tokens"]) for e in held]
    assert 1 in dets and dets.count(1) < len(dets)  # the data offers both
    assert [dets[i] for i, e in enumerate(held) if e is shown] == [1]
    # the first job's score on the pair is its score over that one pair
    pair = rh.run_example(model, tokenizer, text_a, text_b)
    scores, _ = jobs.job_shares([pair], jobs.previous_word)
    first = study.jobs[0]
    assert study.on_pair(first) == scores[0, first.layer, first.head].item()
    # opened on another job's head, the numbers follow that head and job
    nxt = study.jobs[1]
    next_scores, _ = jobs.job_shares([pair], jobs.next_word)
    numbers = study.numbers(nxt)
    assert (numbers["first_layer"], numbers["first_head"]) == (
        nxt.layer,
        nxt.head,
    )
    assert numbers["first_job"] == "next word"
    assert (numbers["first_even"], numbers["first_median"]) == (
        nxt.even,
        nxt.median,
    )
    assert study.on_pair(nxt) == next_scores[0, nxt.layer, nxt.head]
    numbers = study.numbers()
    assert numbers["first_job"] == "previous word"
    assert numbers["n_pairs"] == len(rh.load_table(rh.SETS["pairs"]))
    # the jobs of one sentence read each sentence alone, the last the pairs
    assert numbers["n_sentences"] == 2 * numbers["n_pairs"]
    assert all(
        len(set(ex["segments"].tolist())) == 1 for ex in study.sentences
    )
    inputs = ["sentences"] * 2 + ["pairs"] + ["sentences"] * 2
    assert [job.inputs for job in study.jobs] == inputs
    # the head-8 figure: "flies" in A and in B on the source's pair
    T = len(study.source_tokens)
    assert study.source_rows.shape == (2, T)
    assert len(study.source_targets) == 3
    assert len(study.source_top) == len(study.source_top_sides) == 2
    at = study.source_top_at[0]  # the word "flies" in A weights most
    assert (
        numbers["flies_top"] == study.source_tokens[at] == study.source_top[0]
    )
    assert numbers["n_flies"] == len(rh.load_table(rh.SETS["flies"]))
    assert numbers["flies_n"] == numbers["n_flies"] // 2  # the odd pairs
    assert numbers["flies_head"] == flies.head
    # the copy control: the same head, on the pairs with B a copy of A
    assert (study.copy_control.layer, study.copy_control.head) == (
        0,
        flies.head,
    )
    assert numbers["copy_lift"] == study.copy_control.score.mean
    assert numbers["clear_share"] == jobs.CLEAR
    # the head-8 paragraph reads layer 0, as the page testing_heads does
    assert flies.layer == 0 and swapped.layer == 0
    claim = rh.claim_two(
        rh.flies_examples(
            model, tokenizer, rh.load_table(rh.SETS["flies"]), "flies"
        )
    )
    assert (flies.head, numbers["flies_lift"]) == (
        claim.layer0.head,
        claim.layer0.score.mean,
    )
    # the other check, chosen on the odd pairs (testing_heads shows both)
    assert swapped.head == claim.layer0_swapped.head
    # the head view's buttons: the jobs, then the "flies" head of "And head 8?"
    assert study.presets[:-1] == [*study.jobs, study.grammar]
    assert study.presets[-1] == (
        f'the "flies" search: layer 0, head {flies.head}',
        0,
        flies.head,
    )
    # the page's verdicts: each decided, each outcome of its rule phrased
    from mhabook.experiments.checkpoint import BUNDLED, PREFERRED, Checkpoint
    from mhabook.experiments.verdicts import decide

    def read(name):  # the page's words for a checkpoint of that name
        loaded = Checkpoint(name, "test", 2, 2, 8)
        found = gallery.page_verdicts(study, first, loaded)
        return {n: decide(*rest)[1] for n, *rest in found}

    assert (
        read(BUNDLED)["model_phrase"]
        == "a sentence encoder, not the source's BERT-base"
    )
    assert read(PREFERRED)["model_phrase"] == "the loaded model"
    verdicts = gallery.page_verdicts(
        study, first, Checkpoint(BUNDLED, "", 2, 2, 8)
    )
    names = [name for name, *_ in verdicts]
    assert names == [
        "model_phrase",
        "jobs_done",
        "jobs_beyond",
        "grammar_place",
        "grammar_rival_side",
        "grammar_ahead",
        "grammar_after_side",
        "grammar_share_box",
        "first_look",
        "first_place",
        "flies_top_match",
        "flies_draws",
        "copy_passes",
        "copy_means",
    ]
    for name, rule, args, phrases in verdicts:
        decide(rule, args, phrases)
        if rule == "above":
            assert set(phrases) == {True, False}, name
        elif rule == "compare":
            assert set(phrases) == {"less", "same", "more"}, name
        else:
            assert set(phrases) == {"none", "some", "most", "all"}, name
    assert study.jobs_done == 0  # so the page says "none has"
    assert decide(*verdicts[1][1:])[1] == "none has"
    beyond = "no head here beats its fixed distance"
    assert decide(*verdicts[2][1:])[1] == beyond
    draws = verdicts[names.index("flies_draws")]  # a random BERT: no picture
    assert decide(*draws[1:]) == (False, "does not hold")
    # the box sets the view's head against place alone, or says none applies
    place = verdicts[names.index("first_place")]
    assert first.high < 0.5  # a random BERT's head: far below the rule
    assert decide(*place[1:])[1] == "a fixed-distance rule does better"
    # judged as the table prints: 0.999 to 1.000 is 1.00, as is the rule
    near = dataclasses.replace(first, low=0.9985, high=0.9999, place=1.0)
    (place,) = [
        v
        for v in gallery.page_verdicts(
            study, near, Checkpoint(BUNDLED, "", 2, 2, 8)
        )
        if v[0] == "first_place"
    ]
    assert decide(*place[1:])[1] == "a fixed-distance rule does as well"
    cls = dataclasses.replace(first, name="[CLS]")  # a token's job
    (place,) = [
        v
        for v in gallery.page_verdicts(
            study, cls, Checkpoint(BUNDLED, "", 2, 2, 8)
        )
        if v[0] == "first_place"
    ]
    assert decide(*place[1:])[1] == "no fixed distance applies"


def test_on_pair_reads_the_jobs_own_row_and_refuses_a_head_of_no_job():
    job = jobs.Job("next word", 1, 2, 0.9, 0.8, 1.0, 0.1, 0.1, 10)
    scores = torch.zeros(2, L, H)  # (jobs, L, h), on the pair
    scores[0, 1, 2] = 0.25  # the previous-word job, the same head
    scores[1, 1, 2] = 0.75  # the next-word job, layer 1, head 2
    first = dataclasses.replace(job, name="previous word")
    study = SimpleNamespace(jobs=[first, job], pair_scores=scores)
    assert jobs.RealHeads.on_pair(study, job) == 0.75
    assert jobs.RealHeads.on_pair(study, first) == 0.25
    mine = dataclasses.replace(job, name="mine")
    with pytest.raises(ValueError, match="not one of study.jobs.*next word"):
        jobs.RealHeads.on_pair(study, mine)


def test_a_job_that_returns_positions_instead_of_a_grid_is_refused():
    def targets_only(example):  # (T,) positions: not a (T, T) grid
        return torch.arange(len(example["tokens"]))

    with pytest.raises(ValueError, match=r"returns a \(8, 8\) bool tensor"):
        jobs.job_shares([example()], targets_only)


def test_the_grammar_job_marks_the_noun_that_closes_each_phrase():
    ex = {**bare(), "phrases": [(1, 3)]}  # "time flies like": 1 word between
    targets = jobs.determiner_noun(ex)
    assert targets.nonzero().tolist() == [[1, 3]]
    assert not jobs.determiner_noun(bare()).any()  # no labels, no targets


def test_the_grammar_numbers_read_the_held_out_phrases():
    attention = torch.zeros(L, H, T, T)
    attention[0, 1, 1, 3] = 0.5  # two words between determiner and noun
    attention[0, 1, 1, 2] = 0.25  # the noun is not the top token here
    attention[0, 1, 5, 6] = 0.75  # none between, and the top token
    held_out = [{"attention": attention, "phrases": [(1, 3), (5, 6)]}]
    job = jobs.Job(jobs.GRAMMAR, 0, 1, 0.6, 0.5, 0.7, 0.1, 0.05, 2)
    study = SimpleNamespace(grammar=job, phrases=[{}, *held_out])
    rows = jobs.RealHeads.grammar_rows.fget(study)
    assert rows == [(1, 0.5, True), (0, 0.75, True)]
    study.grammar_rows = rows
    between = jobs.RealHeads.grammar_between.fget(study)
    assert between == 0.0  # the one word between (2) puts nothing on 3
    attention[0, 1, 2, 3] = 0.4  # now the word between looks at the noun
    assert jobs.RealHeads.grammar_between.fget(study) == pytest.approx(0.4)
    study.grammar_between = between
    attention[0, 1, 1, 4] = 0.1  # the token just past the first noun
    after = jobs.RealHeads.grammar_after.fget(study)
    assert after == pytest.approx(0.1 / 2)  # and 0 past the second
    study.grammar_after = after
    # the word just before the determiner: the second phrase only (the
    # first opens at 1, after [CLS]), whose noun is its next noun too
    assert jobs.RealHeads.grammar_before.fget(study) == 0.0
    attention[0, 1, 4, 6] = 0.3
    before = jobs.RealHeads.grammar_before.fget(study)
    assert before == pytest.approx(0.3)
    study.grammar_before = before
    # the best rule of place: the distance most common in the held-out
    # phrases, and how many nouns stand there
    offset = jobs.RealHeads.grammar_offset.fget
    assert offset(SimpleNamespace(grammar=job, phrases=[{}])) == (0, 0)
    two = {"attention": attention, "phrases": [(0, 2), (3, 5), (6, 7)]}
    study.phrases = [{}, two]  # distances 2, 2 and 1, held out
    assert offset(study) == (2, 2)
    study.phrases = [{}, *held_out]
    assert offset(study) in [(2, 1), (1, 1)]  # a tie: either finds one
    study.grammar_offset = (2, 1)
    study.phrases = [{}, *held_out] * 2  # two phrases per set: labels count
    numbers = jobs.RealHeads.grammar_numbers(study)
    assert (numbers["grammar_top"], numbers["grammar_n"]) == (2, 2)
    assert numbers["grammar_after"] == after
    assert (numbers["grammar_distance"], numbers["grammar_by_place"]) == (2, 1)
    assert numbers["grammar_before"] == before
    study.grammar_before = float("nan")  # no held-out phrase follows a word
    with pytest.raises(ValueError, match="keep some phrases after their"):
        jobs.RealHeads.grammar_numbers(study)


@pytest.mark.parametrize(
    "phrase, message",
    [
        ("flies", "has one word: write the determiner and its noun"),
        ("fruit time", "is not in its sentence 'time flies fruit'"),
        ("time flies", r"not a determiner \(this set reads a, an, the\)"),
        ("flies, fruit", r"reads 'flies,' as \['flies', '\[UNK\]'\], not"),
    ],
)
def test_a_phrase_the_sentence_lacks_or_cannot_mark_is_refused(
    phrase, message
):
    from mhabook.experiments.realheads import Row
    from tiny import tiny_bert, tiny_tokenizer

    row = Row(["time flies fruit", phrase])
    row.line = 7
    with pytest.raises(
        ValueError, match=f"noun_phrases.tsv, line 7,.*{message}"
    ):
        jobs.phrase_examples(
            tiny_bert(), tiny_tokenizer(), [row], "book/data/noun_phrases.tsv"
        )


def test_a_phrase_that_holds_a_second_phrase_is_refused():
    from transformers import BertTokenizerFast

    from mhabook.experiments.realheads import Row
    from tiny import WORDS, tiny_bert

    words = [*WORDS, "the", "top", "of", "hill", "old"]
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(words)})
    row = Row(["the old top of the hill", "the old top of the hill"])
    row.line = 44
    model = tiny_bert(vocab_size=len(words))
    with pytest.raises(ValueError, match="line 44,.*is not a determiner"):
        jobs.phrase_examples(model, tokenizer, [row], "noun_phrases.tsv")
    row[1] = "the old top"  # the phrase up to its noun
    (ex,) = jobs.phrase_examples(model, tokenizer, [row], "noun_phrases.tsv")
    assert ex["phrases"] == [(1, 3)]


def test_a_job_is_found_by_name_or_refused_with_the_names():
    assert jobs.job_rule("previous word") is jobs.previous_word
    with pytest.raises(ValueError, match="noun_phrases.tsv; use one of"):
        jobs.job_rule(jobs.GRAMMAR)
    with pytest.raises(ValueError, match="is not a job: use one of"):
        jobs.job_rule("last word")
    with pytest.raises(ValueError, match="give text_b a sentence"):
        jobs.real_heads_results(None, None, "time flies", None)


def test_the_head_8_account_names_the_side_flies_in_a_looks_at_most():
    study = SimpleNamespace(source_top_sides=["B"])
    answers = gallery.source_answers(study)
    assert answers == {"flies_top_side": "in sentence B"}
    study.source_top_sides = ["A"]
    assert gallery.source_answers(study)["flies_top_side"] == "in sentence A"


def test_a_readers_job_that_most_keys_answer_is_refused():
    def every_word(example):  # as a grid whose axes were swapped can do
        words = jobs.rh.is_word(example)
        return words[:, None] & words[None, :]  # 5 of the 8 keys

    examples = [example() for _ in range(4)]
    with pytest.raises(ValueError, match=r"spread already puts 62%.*columns"):
        jobs.best_at(examples, every_word)
    assert jobs.best_at(examples, "previous word").even < 0.5  # the gallery's


def test_a_readers_job_with_cls_or_sep_targets_is_refused_unless_asked():
    def to_first_token(example):  # off by one: position 0 is [CLS]
        T = len(example["tokens"])
        targets = torch.zeros(T, T, dtype=torch.bool)
        targets[:, 0] = jobs.rh.is_word(example)
        return targets

    examples = [example() for _ in range(4)]
    with pytest.raises(ValueError, match=r"mark only words.*specials=True"):
        jobs.best_at(examples, to_first_token)
    found = jobs.best_at(examples, to_first_token, specials=True)
    assert found.name == "to first token"
    jobs.best_at(examples, "[CLS]")  # the gallery's own [CLS] job
