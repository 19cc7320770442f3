"""A reader who changes a cell gets a working page or an error that says
what to do (issue 32).

Each edit below changes a notebook as a reader would: it finds a cell by a
string only that cell holds and replaces a string in it
(tests/tools/edit_notebook.py). The notebook then runs from its imports
cell through the edited cell, or through `until`, the cell where the change
shows, not to its end unless the edit needs it. Each edit expects one of
two outcomes:

- it runs through (`refuses` is None); `notes` says whether the page must
  print a "Note:" (the text's claim about the default example does not
  hold for this input) or must not. (That the default example itself
  prints none, test_notebooks.py checks on the book build's own run.)
- it stops with an error of the chapter's own (`refuses`, a pattern the
  message must hold): a ValueError, TypeError or OSError, or an
  AssertionError with a message (the property checks of all_heads), whose
  message names the fix, that is holds one of HINTS or an expected shape
  such as (B, T, d). It must stop in the edited cell or in `at`, the cell
  that reads what the edit changed: never far from the edit.

Never a bare AssertionError, an IndexError, a KeyError, a
ZeroDivisionError or any other error: those fail the test.

The edits share one kernel (imports load once; `%reset -f` clears the
names between edits; figures are made on Agg and closed unrendered, the
build renders the page's; a results function of `mhabook` given the same
input as in an earlier edit returns a copy of what it returned then,
tests/harness/memo.py). They do not need the book build, so this file
runs while it builds.
"""

import functools
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
HARNESS = ROOT / "tests" / "harness"
sys.path.insert(0, str(ROOT / "tests" / "tools"))
from edit_notebook import edit_source, find_cell  # noqa: E402

CHAPTERS_OWN = ("ValueError", "TypeError", "OSError", "AssertionError")
HINTS = re.compile(
    r"\b(use|pass|set|give|keep|type|put|add|choose|call|check|fill|"
    r"reshape|save|stack|scale|split|join|export|apply|score|return|"
    r"concatenate|build|mask|select|unset)\b|\(B, T|\(T, T\)",
    re.IGNORECASE,
)
CELL_TIMEOUT = 300  # s


@dataclass(frozen=True)
class Edit:
    notebook: str
    kind: str  # what a reader did, for the report
    changes: tuple = ()  # (a string the cell holds, old, new), in order
    until: str | None = None  # a string the last cell to run holds
    refuses: str | None = None  # a pattern of the chapter's error
    at: str | None = None  # the cell the refusal comes from, if not edited
    notes: bool | None = None  # must (True) or must not (False) print one

    @property
    def name(self):
        return f"{self.notebook}-{self.kind}"


def change(contains, old, new):
    return (contains, old, new)


# head_costs' measurements with 3 repeats, not 15: an edit below them
# needs their record, not their precision.
FEWER_REPEATS = change(
    "r = costs.head_costs_results(", "repeats=15", "repeats=3"
)

# heads_learn's main study with 3 seeds, not 12, and one short setting for
# the one head, not its search: an exercise below it needs its runs, not
# their count.
QUICK_ONE_HEAD = "steps=400, one_head=((1e-2, 400),))"
FEWER_SEEDS = change(
    "runs = tr.heads_learn(",
    "seeds=range(12), steps=400)",
    "seeds=range(3), " + QUICK_ONE_HEAD,
)
# heads_needed's measurements on 5 sentences, 8 rows and one random order
FEWER_SENTENCES = change(
    "result = pr.heads_needed_results(",
    "rows)",
    "rows[:8], every=30, n_orders=1, n_curves=1)",
)

# The cells the edits find (a string each holds once).
ONE_TEXT = 'text = "time flies like an arrow"'
ONE_CHECK = "check_sentence(tokenizer, text, model)"  # the cell after it
MANY_TEXT = "linked = "
ALL_INPUT = "loop = MultiHeadAttention(config)"
LAB_1 = 'sentence = "the cat sat on the mat because it was soft"'
CAUSAL_CHECK = "sees_self = causal_mask(T)"  # all_heads
ONE_END = "tied = AttentionHead("  # one_head's last visible cell
ONE_VERDICTS = 'verdict("tied_short"'  # and the hidden one after it
MANY_QKV = "def qkv_parameters(heads):"  # the last cell before training
ALL_END = "both = causal_mask(longest) & padding_mask(lengths, longest)"
LAB_1_END = "coref_weight=coreference"

DEFAULT = '"time flies like an arrow"'


def one_text(new):
    return change(ONE_TEXT, DEFAULT, new)


def many_text(new, linked=None):
    edits = [change(MANY_TEXT, DEFAULT, new)]
    if linked:
        edits.append(change(MANY_TEXT, '"time", "flies", "arrow"', linked))
    return tuple(edits)


EDITS = [
    # one_head: the sentence, the sizes, the formula, the order
    Edit(
        "one_head",
        "repeated word",
        (one_text('"the cat sat on the mat"'),),
        until=ONE_END,
        notes=True,
    ),
    Edit(
        "one_head",
        "one Linear for queries and keys",
        (
            change(
                "class AttentionHead(nn.Module):",
                "self.k = nn.Linear(embed_dim, head_dim)",
                "self.k = self.q",
            ),
        ),
        until="wired = uses_qkv(",
        notes=True,
    ),
    Edit(
        "labs",
        "Lab 1's pronoun as its own referent",
        (change(LAB_1, 'referent = "mat"', 'referent = "it"'),),
        until=LAB_1_END,
        refuses="cannot refer to itself",
        at=LAB_1_END,
    ),
    Edit(
        "one_head",
        "the chapter's key transposed on the wrong axes",
        (
            change(
                "def scaled_dot_product_attention(",
                "key.transpose(-2, -1)",
                "key.transpose(0, 1)",
            ),
        ),
        until="hand_check(scaled_dot_product_attention)",
        refuses=r"check its code.*transpose\(-2, -1\)",
        at="hand_check(scaled_dot_product_attention)",
    ),
    Edit(
        "one_head",
        "the chapter's output averaging the keys",
        (
            change(
                "def scaled_dot_product_attention(",
                "return weights @ value, weights",
                "return weights @ key, weights",
            ),
        ),
        until="hand_check(scaled_dot_product_attention)",
        notes=True,
    ),
    Edit(
        "one_head",
        "the off-diagonal mask without its ~",
        (
            change(
                "off = ~torch.eye(len(tokens)",
                "off = ~torch.eye(",
                "off = torch.eye(",
            ),
        ),
        until="if off.diagonal().any()",
        refuses=r"every pair but \(i, i\): use ~torch.eye",
        at="if off.diagonal().any()",
    ),
    Edit(
        "one_head",
        "a diagonal summed, not averaged",
        (
            change(
                "def diagonal_share(weights):",
                ".mean().item()",
                ".sum().item()",
            ),
        ),
        until="elsewhere = len(tokens) - own",
        refuses="mean, not its sum",
        at="elsewhere = len(tokens) - own",
    ),
    Edit(  # reader-edit set 45 #6: the largest weight, not the mean
        "one_head",
        "a diagonal's largest weight, not its mean",
        (
            change(
                "def diagonal_share(weights):",
                ".mean().item()",
                ".max().item()",
            ),
        ),
        until="elsewhere = len(tokens) - own",
        refuses="not its sum or largest",
        at="elsewhere = len(tokens) - own",
    ),
    Edit(  # reader-edit set 45 #5: the mask never applied
        "one_head",
        "the masking line deleted",
        (
            change(
                "def scaled_dot_product_attention(",
                'scores = scores.masked_fill(~mask, float("-inf"))',
                "pass",
            ),
        ),
        until="hand_check(scaled_dot_product_attention)",
        notes=True,
    ),
    Edit(
        "one_head",
        "a sentence of 35 words",
        (
            one_text(
                '"after a long winter our small village by the river woke '
                "to warm days as farmers walked out early and children ran "
                "along muddy lanes while merchants arrived with new goods "
                'from distant towns"'
            ),
        ),
        until="far from an even spread here",
        notes=False,  # near-even for its length, as the text says
    ),
    Edit(
        "one_head",
        "two words",
        (one_text('"time flies"'),),
        until=ONE_END,
        notes=False,  # a near-even head and the tied one read as the text
    ),
    Edit(
        "one_head",
        "[CLS] and [SEP] kept",
        (
            change(
                ONE_TEXT, "add_special_tokens=False", "add_special_tokens=True"
            ),
        ),
        ONE_END,
    ),
    Edit(
        "one_head",
        "embeddings a hundred times smaller",
        (
            change(
                "inputs_embeds = token_emb(",
                "token_emb(inputs.input_ids)",
                "0.01 * token_emb(inputs.input_ids)",
            ),
        ),
        ONE_END,
    ),
    Edit(
        "one_head",
        "one word five times",
        (one_text('"la la la la la"'),),
        until=ONE_END,
        notes=True,
    ),
    Edit(
        "one_head",
        "the query passed as the key",
        (
            change(
                "class AttentionHead(",
                "self.k(hidden_state),",
                "self.q(hidden_state),",
            ),
        ),
        until="even = abs(head_share",
        notes=True,
    ),
    Edit(
        "one_head",
        "cosines over the wrong axis",
        (change("cosine = torch.cosine_similarity(", "dim=-1", "dim=0"),),
        until="even = abs(head_share",
        at="even = abs(head_share",
        refuses="one cosine per token",
    ),
    Edit(
        "one_head",
        "the reordered output set against the unreordered one",
        (change("same = torch.allclose(", "in_order[:, order]", "in_order"),),
        until="if not same:",
        at="if not same:",
        refuses=r"in_order\[:, order\]",
    ),
    Edit(
        "one_head",
        "scores divided by the square root of T, not of d_k",
        (
            change(
                "def scaled_dot_product_attention(",
                "dim_k = query.size(-1)",
                "dim_k = query.size(-2)",
            ),
        ),
        until="hand_check(scaled_dot_product_attention)",
        notes=True,
    ),
    Edit(
        "one_head",
        "softmax over the queries",
        (
            change(
                "def scaled_dot_product_attention(",
                "torch.softmax(scores, dim=-1)",
                "torch.softmax(scores, dim=-2)",
            ),
        ),
        until="hand_check(scaled_dot_product_attention)",
        notes=True,
    ),
    Edit(
        "one_head",
        "capital and period",
        (one_text('"Time flies like an arrow."'),),
        until=ONE_END,
        notes=True,
    ),
    Edit(
        "one_head",
        "word cut into pieces",
        (one_text('"time flies like an arrowhead"'),),
        until=ONE_CHECK,
        notes=True,
    ),
    Edit(
        "one_head",
        "unknown character",
        (one_text('"time flies 🙂"'),),
        until=ONE_CHECK,
        notes=True,
    ),
    Edit(  # reader-edit set 40 #2: the count's mask inverted
        "one_head",
        "attend_to_self masking all but the diagonal",
        (
            change(
                "def attend_to_self(",
                "weights.masked_fill(diagonal, 0)",
                "weights.masked_fill(~diagonal, 0)",
            ),
        ),
        until="elsewhere = len(tokens) - own",
        refuses=r"use masked_fill\(diagonal, 0\)",
        at="elsewhere = len(tokens) - own",
    ),
    Edit(  # reader-edit set 41 #28: heads zeroed before the queries
        "heads_needed",
        "heads_removed hooking the attention's input, not W^O's",
        (
            FEWER_SENTENCES,
            change(
                "def heads_removed(",
                "layers[i].attention.output.dense",
                "layers[i].attention.self",
            ),
        ),
        until="check_removed(changed, model, sentence, removed)",
        refuses=r"on each layer's attention\.output\.dense",
        at="check_removed(changed, model, sentence, removed)",
    ),
    Edit(  # reader-edit set 42 O5: long vectors saturate the random head
        "one_head",
        "embeddings ten times longer",
        (
            change(
                "token_emb = nn.Embedding(",
                "token_emb(inputs.input_ids)  #",
                "10 * token_emb(inputs.input_ids)  #",
            ),
        ),
        until=ONE_VERDICTS,
    ),
    Edit(  # reader-edit set 42 O3: d_k = d, the tied head back at the wall
        "one_head",
        "one head as wide as the model",
        (
            change(
                ONE_TEXT,
                "config = BertConfig()",
                "config = BertConfig(num_attention_heads=1)",
            ),
        ),
        until=ONE_VERDICTS,
    ),
    Edit(  # reader-edit set 44 #14: the taught layer without its dropout
        "all_heads",
        "AttentionLayer with its dropout line deleted",
        (
            change(
                "class AttentionLayer(nn.Module):",
                "weights = self.dropout(weights)  # only in training",
                "pass  # no dropout",
            ),
        ),
        until="none dropped: p = 0, or no self.dropout",
        notes=True,
    ),
    Edit(  # reader-edit set 43 #8: a fourth token in the hand-checked layer
        "many_heads",
        "a fourth token in the layer checked by hand",
        (
            change(
                "X = torch.tensor([[1.0, 0, 1, 0]",
                "[1, 1, 0, 0]])",
                "[1, 1, 0, 0], [0, 0, 1, 1]])",
            ),
        ),
        until="as_text = X.shape == (3, 4)",
        notes=True,
    ),
    Edit(  # reader-edit set 42 M6: the concatenated heads returned
        "many_heads",
        "the layer returning its heads without W^O",
        (
            change(
                "class MultiHeadAttention(nn.Module):",
                "return self.output_linear(x), weights",
                "return x, weights",
            ),
        ),
        until="check_through_w_o(summed, attn_output)",
        refuses=r"return self\.output_linear\(x\)",
        at="check_through_w_o(summed, attn_output)",
    ),
    Edit(  # reader-edit set 41 #3: each column's largest, not each row's
        "one_head",
        "attend_to_self comparing with columns",
        (change("def attend_to_self(", ".amax(-1)", ".amax(0)"),),
        until="elsewhere = len(tokens) - own",
        refuses=r"masked_fill\(diagonal, 0\)\.amax\(-1\)",
        at="elsewhere = len(tokens) - own",
    ),
    Edit(
        "one_head",
        "empty sentence",
        (one_text('""'),),
        until=ONE_CHECK,
        refuses="at least 2 words",
        at=ONE_CHECK,
    ),
    Edit(
        "one_head",
        "longer than the positions",
        (one_text('"time " * 600'),),
        until=ONE_CHECK,
        refuses="reads at most 512.*shorter sentence",
        at=ONE_CHECK,
    ),
    Edit(
        "one_head",
        "width 256, 4 heads",
        (
            change(
                ONE_TEXT,
                "config = BertConfig()",
                "config = BertConfig(hidden_size=256, num_attention_heads=4)",
            ),
        ),
        until=ONE_END,
    ),
    Edit(
        "one_head",
        "width 64",
        (
            change(
                ONE_TEXT,
                "config = BertConfig()",
                "config = BertConfig(hidden_size=64, num_attention_heads=4)",
            ),
        ),
        until=ONE_END,
        notes=True,
    ),
    Edit(
        "one_head",
        "no division by sqrt(d_k)",
        (
            change(
                "def scaled_dot_product_attention(",
                " / math.sqrt(dim_k)",
                "",
            ),
        ),
        until=ONE_END,
        notes=True,
    ),
    Edit(
        "one_head",
        "old order, shorter sentence",
        (
            one_text('"time flies like"'),
            change(
                "order = torch.arange(",
                "torch.arange(len(tokens)).flip(0)",
                "torch.tensor([4, 2, 0, 3, 1])",
            ),
        ),
        until="order = torch.arange(",
        refuses="use an order that lists 0 to 2 once",
    ),
    Edit(
        "one_head",
        "an order of floats",
        (
            change(
                "order = torch.arange(",
                "torch.arange(len(tokens)).flip(0)",
                "torch.tensor([4.0, 3.0, 2.0, 1.0, 0.0])",
            ),
        ),
        until="order = torch.arange(",
        refuses=r"order\.long\(\)",
    ),
    Edit(
        "one_head",
        "the order as it was",
        (
            change(
                "order = torch.arange(",
                "torch.arange(len(tokens)).flip(0)",
                "torch.arange(len(tokens))",
            ),
        ),
        until="order = torch.arange(",
        refuses="leaves every token in place",
    ),
    Edit(
        "one_head",
        "random order",
        (
            change(
                "order = torch.arange(",
                "torch.arange(len(tokens)).flip(0)",
                "torch.randperm(len(tokens))",
            ),
        ),
        until="order = torch.arange(",
    ),
    Edit(
        "one_head",
        "float 0/1 mask",
        (
            change(
                "head = AttentionHead(config.hidden_size, head_dim)",
                "head(inputs_embeds)",
                "head(inputs_embeds, torch.ones(len(tokens), len(tokens)))",
            ),
        ),
        refuses=r"mask.bool\(\)",
    ),
    Edit(
        "one_head",
        "causal bool mask",
        (
            change(
                "head = AttentionHead(config.hidden_size, head_dim)",
                "head(inputs_embeds)",
                "head(inputs_embeds, torch.ones(len(tokens), len(tokens))"
                ".bool().tril())",
            ),
        ),
        until="title = f",
    ),
    Edit(
        "one_head",
        "checkpoint folder not there",
        (
            change(
                ONE_TEXT,
                "load_checkpoint()",
                'load_checkpoint("path/to/bert")',
            ),
        ),
        refuses="checkpoint folder 'path/to/bert' not found. Looked in",
    ),
    Edit(
        "one_head",
        "exercise 2 ties the values, not the keys",
        (
            change(
                ONE_END,
                "tied.k.load_state_dict(tied.q.state_dict())",
                "tied.v.load_state_dict(tied.q.state_dict())",
            ),
        ),
        until="note_unless(torch.equal(tied.k.weight",
        notes=True,
    ),
    Edit(
        "one_head",
        "Ex. 2 tying the head itself, not a copy",
        (
            change(
                ONE_END,
                "tied = AttentionHead(config.hidden_size, head_dim)\n"
                "tied.load_state_dict(head.state_dict())",
                "tied = head",
            ),
        ),
        until="note_unless(torch.equal(tied.k.weight",
        notes=True,
    ),
    # many_heads: the sentence and its two words, the config, the layer
    Edit(
        "many_heads",
        "the width split with / where // belongs",
        (
            change(
                "class MultiHeadAttention(nn.Module):",
                "embed_dim // num_heads",
                "embed_dim / num_heads",
            ),
        ),
        until="small = MultiHeadAttention(BertConfig(",  # its first call
        refuses=r"float size .*use // for whole sizes",
        at="small = MultiHeadAttention(BertConfig(",
    ),
    Edit(
        "many_heads",
        "the heads' weights stacked on the batch axis",
        (
            change(
                "class MultiHeadAttention(nn.Module):",
                "for _, w in results], dim=1)",
                "for _, w in results], dim=0)",
            ),
        ),
        until="small = MultiHeadAttention(BertConfig(",  # its first call
        refuses=r"heads on axis 1 \(stack\(\.\.\., dim=1\)",
        at="small = MultiHeadAttention(BertConfig(",
    ),
    Edit(
        "sharing_kv",
        "a query head's keys and values where a group's belong",
        (
            change(
                "class GroupedQueryAttention(nn.Module):",
                "nn.Linear(d, 2 * g * d_k, bias=bias)",
                "nn.Linear(d, 2 * h * d_k, bias=bias)",
            ),
        ),
        until="steps = [layer(x[:, t : t + 1], cache=cache)[0]",
        refuses="check the forward's code",
        at="steps = [layer(x[:, t : t + 1], cache=cache)[0]",
    ),
    Edit(
        "all_heads",
        "the keys transposed on the wrong axes",
        (
            change(
                "def batched_attention(",
                "K.transpose(-2, -1) / Q.shape",
                "K.transpose(1, 2) / Q.shape",
            ),
        ),
        until="batched = batched_from_loop(loop)  # the loop's",
        refuses="check the forward's code",
        at="batched = batched_from_loop(loop)  # the loop's",
    ),
    Edit(
        "many_heads",
        "a strength of zero for the one-head split",
        (change("strength = 4.0  # as the pointer heads", "4.0", "0.0"),),
        until="check_strength(strength)",
        refuses="keep 0 < strength",
        at="check_strength(strength)",
    ),
    Edit(  # reader-edit set 39 #7: even halves at any strength
        "many_heads",
        "a weaker strength for the one-head split",
        (change("strength = 4.0  # as the pointer heads", "4.0", "1.0"),),
        until='glue("split_weight"',
        notes=False,
    ),
    Edit(  # reader-edit set 36 #9: the split glued from one weight only
        "many_heads",
        "the one-head split pointed at the verb, not the likened word",
        (change("(keys[time] + keys[arrow])", "keys[arrow]", "keys[flies]"),),
        until='glue("split_weight"',
        notes=True,
    ),
    Edit(
        "many_heads",
        "the value map left out of the count",
        (
            change(
                "def qkv_parameters",
                "head.q, head.k, head.v",
                "head.q, head.k",
            ),
        ),
        until="note_unless(one == many",
        notes=True,
    ),
    Edit(
        "many_heads",
        "the one head built at d_k, not as wide as the layer",
        (
            change(
                "def qkv_parameters",
                "AttentionHead(d, d)",
                "AttentionHead(d, d // h)",
            ),
        ),
        until="note_unless(one == many",
        notes=True,
    ),
    Edit(
        "many_heads",
        "the probe's nudge switched off",
        (
            change(
                "edited.heads[probe]",
                "v.weight.add_(0.1)",
                "v.weight.add_(0.0)",
            ),
            change(
                "edited.heads[probe]",
                "q.weight.add_(0.1)",
                "q.weight.add_(0.0)",
            ),
        ),
        refuses="no head changed: use a nonzero edit of q, k or v",
    ),
    Edit(
        "many_heads",
        "the semantic head pointed at another word",
        (
            change(
                "semantic = pointer_head(",
                "targets[flies] = arrow",
                "targets[flies] = time",
            ),
        ),
        until='glue("head_weight"',
        notes=True,
    ),
    Edit(
        "many_heads",
        "new sentence, words kept",
        many_text('"the cat sat on the mat"'),
        refuses="'time' is not in the sentence.*[Uu]se words",
    ),
    Edit(
        "many_heads",
        "new sentence and words",
        many_text('"the cat sat on the mat"', '"cat", "sat", "mat"'),
        until=MANY_QKV,
    ),
    Edit(
        "many_heads",
        "capitalised word",
        many_text('"Time flies like an arrow."', '"Time", "flies", "arrow"'),
        refuses="reads 'Time' as 'time'.*[Uu]se 'time' instead",
    ),
    Edit(
        "many_heads",
        "absent word",
        many_text(DEFAULT, '"time", "fly", "arrow"'),
        refuses="'fly' is not in the sentence",
    ),
    Edit(
        "many_heads",
        "word cut into pieces",
        many_text(
            '"time flies like an arrowhead"', '"time", "flies", "arrowhead"'
        ),
        refuses="cuts 'arrowhead' into the pieces",
    ),
    Edit(
        "many_heads",
        "long sentence",
        many_text(
            '"the quick brown fox jumps over the lazy dog in the rain"',
            '"fox", "jumps", "dog"',
        ),
        until="shown = tokens",
    ),
    Edit(
        "many_heads",
        "the exercise through config: 2 heads",
        (
            change(
                MANY_TEXT,
                "config = BertConfig()",
                "config = BertConfig(num_attention_heads=2)",
            ),
        ),
        until=MANY_QKV,
    ),
    Edit(
        "many_heads",
        "width 256, 4 heads",
        (
            change(
                MANY_TEXT,
                "config = BertConfig()",
                "config = BertConfig(hidden_size=256, num_attention_heads=4)",
            ),
        ),
        until=MANY_QKV,
    ),
    Edit(
        "many_heads",
        "5 heads for 768",
        (
            change(
                MANY_TEXT,
                "config = BertConfig()",
                "config = BertConfig(num_attention_heads=5)",
            ),
        ),
        until="multi_head_overview(",
        refuses="such as 4 or 6",
        at="multi_head_overview(",
    ),
    Edit(
        "many_heads",
        "a dict for the config",
        (
            change(
                "multihead_attn = MultiHeadAttention(config)",
                "MultiHeadAttention(config)",
                "MultiHeadAttention(config.to_dict())",
            ),
        ),
        refuses=r"BertConfig\(\*\*config\)",
    ),
    Edit(
        "many_heads",
        "sizes for the config",
        (
            change(
                "multihead_attn = MultiHeadAttention(config)",
                "MultiHeadAttention(config)",
                "MultiHeadAttention(768, 12)",
            ),
        ),
        refuses=r"use MultiHeadAttention\(BertConfig\(hidden_size=768",
    ),
    Edit(
        "many_heads",
        "input without a batch axis",
        (
            change(
                "multihead_attn = MultiHeadAttention(config)",
                "multihead_attn(inputs_embeds, mask)",
                "multihead_attn(inputs_embeds[0], mask)",
            ),
        ),
        refuses=r"\(B, T, d\).*hidden_state\[None\]",
    ),
    Edit(
        "many_heads",
        "float 0/1 mask on the loop layer",
        (
            change(
                "multihead_attn = MultiHeadAttention(config)",
                "mask = None",
                "mask = torch.ones(len(tokens), len(tokens))",
            ),
        ),
        refuses=r"mask.bool\(\)",
    ),
    Edit(
        "many_heads",
        "a causal mask for the layer and its heads",
        (
            change(
                "multihead_attn = MultiHeadAttention(config)",
                "mask = None",
                "mask = torch.ones(len(tokens), len(tokens)).bool().tril()",
            ),
        ),
        until="glued |= dict(changed_from=",
    ),
    Edit(
        "many_heads",
        "shape_flow for 7 heads",
        (
            change(
                "mb.shape_flow(",
                "hidden, config.num_attention_heads",
                "hidden, 7",
            ),
        ),
        refuses="768 does not split into 7.*such as 6 or 8",
    ),
    Edit(
        "many_heads",
        "a target that is not a position",
        (
            change(
                "subject = pointer_head(targets)",
                "targets[flies] = arrow",
                "targets[flies] = 1.5",
            ),
        ),
        refuses="use 0 to 4",
    ),
    Edit(
        "many_heads",
        "pointer strength 0",
        (
            change(
                "subject = pointer_head(targets)",
                "subject = pointer_head(targets)",
                "subject = pointer_head(targets, strength=0.0)",
            ),
        ),
        refuses="keep 0 < strength < inf",
    ),
    Edit(
        "many_heads",
        "every token in the small figure",
        (
            *many_text(
                '"the quick brown fox jumps over the lazy dog in the rain"',
                '"fox", "jumps", "dog"',
            ),
            change("shown = tokens[:8]", "tokens[:8]", "tokens"),
        ),
        until="shown = tokens",
        refuses="pass the first 8 tokens",
    ),
    Edit(
        "real_heads",
        "no sentence B",
        (
            change(
                "study = jobs.real_heads_results(",
                '"fruit flies like a banana"',
                "None",
            ),
        ),
        refuses="give text_b a sentence",
    ),
    Edit(
        "real_heads",
        "exercise 1 at the grammar job",
        (
            change(
                "peach = rh.run_example(",
                'job = "previous word"',
                'job = "determiner → its noun"',
            ),
        ),
        refuses="noun_phrases.tsv; use one of",
    ),
    Edit(
        "real_heads",
        "exercise 1 at the next word",
        (
            change(
                "peach = rh.run_example(",
                'job = "previous word"',
                'job = "next word"',
            ),
        ),
        until="peach_job=",
    ),
    Edit(
        "real_heads",
        "a layer the model lacks in the query-key figure",
        (
            change(
                "query_key_figure(q, K[top]",
                "layer, head = study.flies.layer, study.flies.head",
                "layer, head = 6, study.flies.head",
            ),
        ),
        refuses="its layers are numbered 0 to",
    ),
    Edit(
        "all_heads",
        "padding lengths as a tensor",
        (
            change(
                "lengths = [5, 3]",
                "lengths = [5, 3]",
                "lengths = torch.tensor([5, 3])",
            ),
        ),
        until="pair = torch.randn(",
    ),
    Edit(
        "heads_learn",
        "a repeated seed",
        (
            change(
                "runs = tr.heads_learn(", "seeds=range(12)", "seeds=[0, 0, 1]"
            ),
        ),
        refuses="repeat a seed.*use distinct seeds",
    ),
    Edit(
        "heads_learn",
        "a task of one digit",
        (
            change(
                "config = tr.TinyConfig()",
                "tr.TinyConfig()",
                "tr.TinyConfig(num_digits=1)",
            ),
        ),
        refuses="num_digits = 1.*use 2 or more",
    ),
    Edit(
        "heads_learn",
        "no training steps",
        (change("runs = tr.heads_learn(", "steps=400", "steps=0"),),
        refuses="a whole number of steps of 1 or more",
    ),
    Edit(
        "heads_learn",
        "50 training steps",
        (
            change(
                "runs = tr.heads_learn(",
                "steps=400)",
                QUICK_ONE_HEAD.replace("steps=400", "steps=50"),
            ),
        ),
        until="note_unless(runs.split[0]",
        notes=True,
    ),
    Edit(
        "many_heads",
        "3 heads in the dropout example",
        (
            change(
                "small = dict(hidden_size=8",
                "num_attention_heads=2",
                "num_attention_heads=3",
            ),
        ),
        refuses="head count that divides 8",
    ),
    Edit(
        "head_costs",
        "a head count given twice",
        (
            change(
                "r = costs.head_costs_results(",
                "head_counts=(1, 4, 12)",
                "head_counts=(1, 1, 12)",
            ),
        ),
        refuses="repeat one",
    ),
    Edit(
        "testing_heads",
        "the rebuild run over the layers in reverse",
        (
            change(
                "for i, block in enumerate(model.encoder.layer)",
                "enumerate(model.encoder.layer)",
                "enumerate(reversed(model.encoder.layer))",
            ),
        ),
        until="if largest >= 1e-4",
        refuses="layer by layer: .*check the steps in order",
        at="if largest >= 1e-4",
    ),
    Edit(
        "testing_heads",
        "the rebuild's residual through the model's own output module",
        (
            change(
                "for i, block in enumerate(model.encoder.layer)",
                "a = block.attention.output.LayerNorm(z + x)",
                "a = block.attention.output(z, x)",
            ),
        ),
        until="if largest >= 1e-4",
        refuses="apply W\\^O a second time",
        at="if largest >= 1e-4",
    ),
    Edit(
        "real_heads",
        "exercise 2's first word counted from [CLS]",
        (
            change(
                "def first_word(example):",
                "int(segments.argmax()), 1)",
                "int(segments.argmax()), 0)",
            ),
        ),
        refuses="mark only words",
    ),
    Edit(
        "real_heads",
        "exercise 2's targets with query and key swapped",
        (
            change(
                "def first_word(example):",
                "targets[torch.arange(T), starts]",
                "targets[starts, torch.arange(T)]",
            ),
        ),
        refuses=r"rows queries, columns keys",
    ),
    Edit(
        "testing_heads",
        "exercise 1 scored on the pairs that chose the head",
        (
            change(
                "held_out, top_k, k, chance = flies[1::2]",
                "flies[1::2], 0, 3",
                "flies[0::2], 0, 3",
            ),
        ),
        until="chose = {id(ex)",
        notes=True,
    ),
    Edit(
        "sharing_kv",
        "grouped_from_bert keeping each group's first head, not the mean",
        (
            change(
                "def grouped_from_bert(",
                "return grouped.mean(1).reshape(",
                "return grouped[:, 0].reshape(",
            ),
        ),
        until="grouped_bert.check_like_package(",
        refuses="make=grouped_from_bert",
        at="grouped_bert.check_like_package(",
    ),
    Edit(  # reader-edit set 41 #32: the mean over the groups, not in each
        "sharing_kv",
        "grouped_from_bert averaging over the groups",
        (
            change(
                "def grouped_from_bert(", "grouped.mean(1)", "grouped.mean(0)"
            ),
        ),
        until="grouped_bert.check_like_package(",
        refuses=r"check how it pools each group's h/g heads",
        at="grouped_bert.check_like_package(",
    ),
    Edit(
        "sharing_kv",
        "a cache whose append never advances its length",
        (change("class KVCache", "self.length = end", "end = end"),),
        until="steps = [layer(x[:, t : t + 1], cache=cache)[0]",
        refuses="holds 0 of the 12 tokens: append must advance",
        at="steps = [layer(x[:, t : t + 1], cache=cache)[0]",
    ),
    Edit(
        "sharing_kv",
        "a cache that returns its whole buffer",
        (
            change(
                "class KVCache",
                "self.keys[:, :, :end], self.values[:, :, :end], mask",
                "self.keys, self.values, mask",
            ),
        ),
        until="steps = [layer(x[:, t : t + 1], cache=cache)[0]",
        refuses=r"return only \[:, :, :end\]",
        at="steps = [layer(x[:, t : t + 1], cache=cache)[0]",
    ),
    Edit(
        "head_costs",
        "the scores' growth read on the fused kernel",
        (
            FEWER_REPEATS,
            change(
                'kind = "batched"  #', 'kind = "batched"', 'kind = "fused"'
            ),
        ),
        until="views.peak_table(r)",
    ),
    Edit(
        "all_heads",
        "dropout on the scores, before the softmax",
        (
            change(
                "weights = self.dropout(weights)  # only in training",
                "weights = self.dropout(weights)  # only in training",
                "",
            ),
            change(
                "weights = zero_empty_queries(scores.softmax(dim=-1), mask)",
                "weights = zero_empty_queries(",
                "scores = self.dropout(scores)\n        weights = "
                "zero_empty_queries(",
            ),
        ),
        until='glue("dropout_p"',
        refuses="masked keys weighted: check mask, dropout after softmax",
        at='glue("dropout_p"',
    ),
    Edit(  # reader-edit set 36 #17: blamed dropout alone
        "all_heads",
        "the dropout demo's causal mask inverted",
        (
            change(
                "mask = causal_mask(T)  # the mask of Fig. 3.1; try None",
                "mask = causal_mask(T)",
                "mask = ~causal_mask(T)",
            ),
        ),
        until='glue("dropout_p"',
        refuses="masked keys weighted: check mask",
        at='glue("dropout_p"',
    ),
    Edit(
        "real_heads",
        "the held-out head scored on the half that chose it",
        (
            change(
                "pair_job = job in jobs.PAIR_JOBS",
                "scores[1::2, layer, head]",
                "scores[0::2, layer, head]",
            ),
        ),
        until="close = abs(held_out",
        notes=True,
    ),
    Edit(
        "real_heads",
        "the held-out cell at the pair job",
        (
            change(
                "pair_job = job in jobs.PAIR_JOBS",
                'job = "next word"',
                'job = "same word, other sentence"',
            ),
        ),
        until="close = abs(held_out",
        notes=False,
    ),
    Edit(
        "real_heads",
        "the score counted over keys, not query rows",
        (change("counted = targets.any(-1)", ".any(-1)", ".any(0)"),),
        until="same = abs(score",
        notes=True,
    ),
    Edit(
        "head_costs",
        "Ex. 2 timed on the loop layer",
        (
            FEWER_REPEATS,
            change(
                "scores_double = len(x)",
                "batched_from_loop(MultiHeadAttention(AttentionConfig(",
                "(MultiHeadAttention(AttentionConfig(",
            ),
        ),
        refuses=r"use batched_from_loop",
    ),
    Edit(
        "heads_learn",
        "Ex. 1 counted with .any()",
        (
            FEWER_SEEDS,
            change(
                "per_job = (runs4.after", ".sum(dim=1)  #", ".any(dim=1)  #"
            ),
        ),
        refuses=r"use \.sum\(dim=1\)",
    ),
    Edit(
        "many_heads",
        "a sentence A without 'flies' in the first look",
        (
            change(
                "pair = tokenizer(text_a, text_b",
                '"time flies like an arrow"',
                '"time passes like an arrow"',
            ),
        ),
        until="fl_share=share",  # the head is found by position
    ),
    Edit(
        "head_costs",
        "width 512 and 16 heads, Ex. 3 included",
        (
            FEWER_REPEATS,
            change(
                "r = costs.head_costs_results(",
                "width=768, head_counts=(1, 4, 12)",
                "width=512, head_counts=(1, 4, 16)",
            ),
        ),
        until='glue("ex3_width"',  # the last cell
    ),
    Edit(
        "heads_learn",
        "Ex. 1 summed over the jobs",
        (
            FEWER_SEEDS,
            change(
                "per_job = (runs4.after", ".sum(dim=1)  #", ".sum(dim=2)  #"
            ),
        ),
        refuses=r"int64 \[3, 4\]: use \.sum\(dim=1\)",
    ),
    Edit(
        "heads_learn",
        "Ex. 1 counting the heads before training",
        (
            FEWER_SEEDS,
            change(
                "per_job = (runs4.after", "runs4.after >", "runs4.before >"
            ),
        ),
        until="trained = per_job.equal(",
        notes=True,
    ),
    Edit(
        "heads_learn",
        "Ex. 1 with a threshold of 50 for a share",
        (
            FEWER_SEEDS,
            change(
                "per_job = (runs4.after",
                "runs4.after > 0.5",
                "runs4.after > 50",
            ),
        ),
        until="trained = per_job.equal(",
        notes=True,
    ),
    Edit(
        "sharing_kv",
        "Ex. 1 keeping the first group, not each group's first head",
        (
            change(
                "def first_of_each_group",
                "return grouped[:, 0]",
                "return grouped[0]",
            ),
        ),
        refuses="keep each group's first head",
    ),
    Edit(
        "head_costs",
        "Ex. 2's scores scaled by T, not T^2",
        (
            FEWER_REPEATS,
            change("scores_double = len(x)", "factor**2", "factor"),
        ),
        refuses=r"check T\^2",
    ),
    Edit(
        "many_heads",
        "pointer_head with the query's indices swapped",
        (
            change(
                "def pointer_head", "Q[i, int(target)]", "Q[int(target), i]"
            ),
        ),
        until='kept = f"The {names}',
        refuses=r"check tril, then Q\[i, target\]",
        at='kept = f"The {names}',
    ),
    Edit(
        "many_heads",
        "Ex. 2 read on the upper triangle",
        (change("allowed = [n for n", ".tril()", ".triu()"),),
        until='kept = f"The {names}',
        refuses="check tril",
        at='kept = f"The {names}',
    ),
    # all_heads: the sizes, the input, the batched layer's steps, masks
    Edit(
        "all_heads",
        "dropout that drops every weight",
        (
            change(
                "layer.train()  # dropout on",
                "layer.train()  # dropout on",
                "layer.train()\nlayer.dropout.p = 1.0",
            ),
        ),
    ),
    Edit(
        "all_heads",
        "dropout without the causal mask",
        (
            change(
                "layer.train()  # dropout on", "causal_mask(T)  #", "None  #"
            ),
        ),
        until="layer.train()  # dropout on",
    ),
    Edit(
        "all_heads",
        "a wider view demo",
        (
            change(
                "x = torch.arange(8)",
                "torch.arange(8).view(1, 2, 4)",
                "torch.arange(12).view(1, 2, 6)",
            ),
        ),
        until="x = torch.arange(",
    ),
    Edit(
        "all_heads",
        "one head",
        (
            change(
                ALL_INPUT,
                "config = BertConfig()",
                "config = BertConfig(hidden_size=64, num_attention_heads=1)",
            ),
        ),
        until=ALL_END,
    ),
    Edit(
        "all_heads",
        "5 heads for 768",
        (
            change(
                ALL_INPUT,
                "config = BertConfig()",
                "config = BertConfig(num_attention_heads=5)",
            ),
        ),
        refuses="such as 4 or 6",
    ),
    Edit(
        "all_heads",
        "a dict for the config",
        (
            change(
                ALL_INPUT,
                "config = BertConfig()",
                'config = {"hidden_size": 768, "num_attention_heads": 12}',
            ),
        ),
        refuses=r"BertConfig\(\*\*config\)",
    ),
    Edit(
        "all_heads",
        "seven tokens, two sequences",
        (
            change(ALL_INPUT, '"an", "arrow"]', '"an", "arrow", "a", "b"]'),
            change(ALL_INPUT, "torch.randn(1, len", "torch.randn(2, len"),
        ),
        until=ALL_END,
    ),
    Edit(
        "all_heads",
        "one token",
        (change(ALL_INPUT, '"flies", "like", "an", "arrow"', ""),),
        until=ALL_END,
    ),
    Edit(
        "all_heads",
        "input of 7 with 5 labels",
        (change(ALL_INPUT, "torch.randn(1, len(tokens)", "torch.randn(1, 7"),),
        until="_, causal_weights = batched(",
        refuses="pass one label per row",
        at="_, causal_weights = batched(",
    ),
    Edit(
        "all_heads",
        "the weights transposed before the values",
        (
            change(
                "def batched_attention(",
                "return weights @ V, weights",
                "return weights.transpose(-2, -1) @ V, weights",
            ),
        ),
        until="check_like_loop(weights,",
        refuses=r"check batched_attention's weights @ V",
        at="check_like_loop(weights,",
    ),
    Edit(
        "all_heads",
        "padding_mask that lets each query see one pad",
        (
            change(
                "def padding_mask(",
                "torch.arange(num_tokens) < lengths[:, None]",
                "torch.arange(num_tokens) <= lengths[:, None]",
            ),
        ),
        until="pad_out, pad_weights = batched(",
        refuses="check padding_mask",
        at="pad_out, pad_weights = batched(",
    ),
    Edit(
        "all_heads",
        "no division by sqrt(d_k)",
        (
            change(
                "def batched_attention(",
                " / Q.shape[-1] ** 0.5",
                "",
            ),
        ),
        until="check_like_loop(weights,",
        refuses="the scaling by sqrt",
        at="check_like_loop(weights,",
    ),
    Edit(
        "all_heads",
        "heads and tokens swapped",
        (
            change(
                "class BatchedMultiHeadAttention(",
                "qkv.permute(2, 0, 3, 1, 4)",
                "qkv.permute(2, 0, 1, 3, 4)",
            ),
        ),
        until="batched = batched_from_loop(loop)  # the loop's",
        refuses=r"heads on axis 1 .*permute to \(B, h, T, d_k\)",
        at="batched = batched_from_loop(loop)  # the loop's",
    ),
    Edit(
        "all_heads",
        "einsum with keys and queries swapped",
        (
            change(
                "def einsum_attention(",
                '"bhqf,bhkf->bhqk", Q, K',
                '"bhqf,bhkf->bhkq", Q, K',
            ),
        ),
        until="def einsum_attention(",
        refuses=r"check the subscripts \(bhqk\)",
    ),
    Edit(
        "all_heads",
        "causal mask flipped",
        (change("def causal_mask(", ".tril()", ".triu()"),),
        until=CAUSAL_CHECK,
        refuses="keep causal_mask's tril",
        at=CAUSAL_CHECK,
    ),
    Edit(
        "all_heads",
        "zero_empty_queries zeroing every row a mask narrows",
        (
            change(
                "def zero_empty_queries(",
                "~mask.any(-1, keepdim=True)",
                "~mask.all(-1, keepdim=True)",
            ),
        ),
        until=CAUSAL_CHECK,
        refuses=r"zero only rows with no key",
        at=CAUSAL_CHECK,
    ),
    Edit(
        "all_heads",
        "causal mask without its diagonal",
        (change("def causal_mask(", ".tril()", ".tril(-1)"),),
        until=CAUSAL_CHECK,
        refuses=r"not tril\(-1\)",
        at=CAUSAL_CHECK,
    ),
    Edit(
        "all_heads",
        "| in place of & in exercise 3",
        (change(ALL_END, "causal_mask(longest) &", "causal_mask(longest) |"),),
        until=ALL_END,  # the solution's glued answer becomes "No, ..."
    ),
    Edit(
        "all_heads",
        "a padded sentence of 0 tokens",
        (change("lengths = [5, 3]", "lengths = [5, 3]", "lengths = [5, 0]"),),
        until=ALL_END,
    ),
    Edit(
        "all_heads",
        "a batch of one sentence",
        (change("lengths = [5, 3]", "lengths = [5, 3]", "lengths = [2]"),),
        until="pair = torch.randn(",
    ),
    Edit(
        "all_heads",
        "mask not applied",
        (
            change(
                "def batched_attention(",
                'scores = scores.masked_fill(~mask, float("-inf"))',
                "scores = scores",
            ),
        ),
        until=CAUSAL_CHECK,
        refuses=r"fill -inf at ~mask",
        at=CAUSAL_CHECK,
    ),
    Edit(
        "all_heads",
        "float 0/1 causal mask",
        (
            change(
                "_, causal_weights = batched(",
                "mask=causal_mask(T))",
                "mask=causal_mask(T).float())",
            ),
        ),
        refuses=r"mask.bool\(\)",
    ),
    Edit(
        "all_heads",
        "sizes for the batched layer",
        (
            change(
                "back = loop_from_batched(batched)",
                "batched = batched_from_loop(loop)",
                "batched = BatchedMultiHeadAttention(d, h)",
            ),
        ),
        refuses=r"use BatchedMultiHeadAttention\(BertConfig",
    ),
    Edit(
        "all_heads",
        "input without a batch axis",
        (
            change(
                "back = loop_from_batched(batched)",
                "out, weights = batched(hidden_state)",
                "out, weights = batched(hidden_state[0])",
            ),
        ),
        refuses=r"hidden_state\[None\]",
    ),
    Edit(
        "all_heads",
        "empty rows left to the softmax",
        (
            change(
                "weights = zero_empty_queries(weights, mask)",
                "    weights = zero_empty_queries(weights, mask)\n",
                "",
            ),
        ),
        until="empty_fused, _ = batched(",
        notes=True,
    ),
    # labs, Lab 1: four hand-made heads on a sentence the reader chooses
    Edit(
        "labs",
        "lab 2 on sentence A alone",
        (
            change(
                "pair = rh.run_example(",
                '"a small dog slept on a rug"',
                "None",
            ),
        ),
    ),
    Edit(
        "labs",
        "another sentence and subject",
        (
            change(LAB_1, "the cat sat on the mat", "the dog sat on the rug"),
            change(LAB_1, '"cat", "it"', '"dog", "it"'),
            change(LAB_1, 'referent = "mat"', 'referent = "rug"'),
        ),
        until=LAB_1_END,
    ),
    Edit(
        "labs",
        "an empty second sentence in the live lab",
        (
            change(
                'live_b = "',
                'live_b = "it fell asleep on the mat"',
                'live_b = ""',
            ),
        ),
        refuses="at least 1",
    ),
    Edit(
        "labs",
        "another sentence, old subject",
        (change(LAB_1, "the cat sat on the mat", "the dog sat on the rug"),),
        refuses="'cat' is not in the sentence.*For subject, use words",
    ),
    Edit(
        "labs",
        "capitalised subject",
        (change(LAB_1, '"cat", "it"', '"Cat", "it"'),),
        refuses="'Cat' is written 'cat'.*use 'cat' instead",
    ),
    Edit(
        "labs",
        "a verb with a period",
        (
            change(LAB_1, "it was soft", "it was soft."),
            change(LAB_1, '("sat", "was")', '("sat", "soft")'),
        ),
        refuses="'soft' is written 'soft.'.*drop the punctuation",
    ),
    Edit(
        "labs",
        "pronoun last",
        (
            change(LAB_1, "because it was soft", "and slept on it"),
            change(LAB_1, '("sat", "was")', '("sat", "slept")'),
        ),
        until=LAB_1_END,
    ),
    Edit(
        "labs",
        "one verb as a string",
        (change(LAB_1, '("sat", "was")', '"sat"'),),
        until=LAB_1_END,
    ),
    Edit(
        "labs",
        "a pronoun that refers to the object",
        (
            change(
                LAB_1,
                '"the cat sat on the mat because it was soft"',
                '"the dog chased the ball because it was fun"',
            ),
            change(
                LAB_1,
                '"cat", "it", ("sat", "was")',
                '"dog", "it", ("chased", "was")',
            ),
            change(LAB_1, 'referent = "mat"', 'referent = "ball"'),
        ),
        until=LAB_1_END,
    ),
    Edit(
        "labs",
        "empty sentence",
        (
            change(
                LAB_1,
                '"the cat sat on the mat because it was soft"',
                '""',
            ),
        ),
        refuses="give pronoun_heads a sentence's words",
    ),
    Edit(
        "labs",
        "the explorer opened on a word",
        (change(LAB_1, "query=it,", 'query="it",'),),
        until=LAB_1,
    ),
]


@functools.cache
def _notebook(name):
    return nbformat.read(BOOK / f"{name}.ipynb", as_version=4)


def _first_cell(edit):
    """(notebook, the first cell it edits): edits of one notebook run
    together, and edits of one cell one after another, so that each can
    start where the kernel already is (`run_edit`) instead of at the
    notebook's first cell."""
    try:
        nb = _notebook(edit.notebook)
        found = [find_cell(nb, contains) for contains, _, _ in edit.changes]
    except (OSError, ValueError):  # the test itself reports it
        found = []
    return edit.notebook, min(found, default=-1)


EDITS.sort(key=_first_cell)


class Kernel:
    """One IPython kernel in book/, as the build runs notebooks there."""

    # every cell's figures are closed after it, unrendered (the build
    # renders the page's); the callback outlives `%reset -f`, and so do
    # the results functions, computed once per input (harness/memo.py)
    SETUP = f"""
def setup():
    import sys
    import matplotlib.pyplot as plt
    close = lambda result: plt.close("all")
    get_ipython().events.register("post_run_cell", close)
    sys.path.insert(0, {str(HARNESS)!r})
    from memo import memoize
    from mhabook.experiments import costs, realheads, sharing, training
    memoize(costs, "head_costs_results")
    memoize(realheads, "testing_results")
    memoize(sharing, "sharing_results")
    memoize(training, "heads_learn")
    memoize(training, "train_runs")  # the one head's search, once
setup()
"""

    def __init__(self):
        from jupyter_client import KernelManager

        from chapter import socket_kernels

        env = {
            **os.environ,
            "MPLBACKEND": "agg",  # figures are made, never rendered
            "HF_HUB_OFFLINE": "1",
            "OMP_NUM_THREADS": "1",  # one core: the book builds on the other
        }
        self.manager = socket_kernels(KernelManager)(kernel_name="python3")
        self.manager.start_kernel(cwd=str(BOOK), env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=120)
        assert self.run(self.SETUP)[0] is None
        # (notebook, its unedited cells run so far, the last cell run)
        self.state = (None, set(), -1)

    def run(self, code):
        """(error name or None, its message, what the code printed)."""
        printed = []

        def keep(message):
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])

        reply = self.client.execute_interactive(
            code, timeout=CELL_TIMEOUT, output_hook=keep, allow_stdin=False
        )["content"]
        if reply["status"] == "error":
            return reply["ename"], reply["evalue"], "".join(printed)
        return None, "", "".join(printed)

    def close(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernel():
    kernel = Kernel()
    yield kernel
    kernel.close()


def edited_cells(edit):
    """The code cells to run, from the imports cell, with the edit made;
    the indices of the cells it changed, and of the cells that may refuse
    it (those, or `at`)."""
    nb = nbformat.read(BOOK / f"{edit.notebook}.ipynb", as_version=4)
    found = [find_cell(nb, contains) for contains, _, _ in edit.changes]
    last = max(found, default=0)
    if edit.until is not None:
        last = find_cell(nb, edit.until)
        assert last >= max(found, default=0), f"{edit.name}: until above"
    refusing = set(found) if edit.at is None else {find_cell(nb, edit.at)}
    for index, (_, old, new) in zip(found, edit.changes):
        nb.cells[index].source = edit_source(nb.cells[index].source, old, new)
    cells = [
        (i, cell)
        for i, cell in enumerate(nb.cells[: last + 1])
        if cell.cell_type == "code"
        and "colab" not in cell.metadata.get("tags", [])
    ]
    return cells, refusing


def run_edit(kernel, edit):
    """(error name, message, the cell's index, all that was printed).

    Where the kernel already holds this notebook's unedited cells above
    the edited one, and nothing below it has run, it starts at the edited
    cell: edits of one cell that refuse there share one prefix (random
    draws then differ from a fresh run's; the outcome does not).
    """
    cells, _ = edited_cells(edit)
    first = min(
        (find_cell(_notebook(edit.notebook), c) for c, _, _ in edit.changes),
        default=None,
    )
    above = {i for i, _ in cells if first is not None and i < first}
    notebook, clean, reached = kernel.state
    if notebook == edit.notebook and above <= clean and reached <= first:
        cells = [(i, cell) for i, cell in cells if i >= first]
    else:
        kernel.run("%reset -f")
        kernel.state = (edit.notebook, set(), -1)
    printed = []
    for index, cell in cells:
        error, message, out = kernel.run(cell.source)
        notebook, clean, reached = kernel.state
        if not error and (first is None or index < first):
            clean = clean | {index}
        kernel.state = (notebook, clean, max(reached, index))
        printed.append(out)
        if error:
            return error, message, index, "".join(printed)
    return None, "", None, "".join(printed)


@pytest.mark.parametrize("edit", EDITS, ids=lambda e: e.name)
def test_an_edited_cell_runs_or_says_what_to_do(kernel, edit):
    error, message, index, printed = run_edit(kernel, edit)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", message)  # no terminal colours
    if edit.refuses is None:
        assert error is None, (
            f"{edit.name}: {error} in cell {index}: {plain[:300]}"
        )
        if edit.notes is not None:
            assert ("Note:" in printed) == edit.notes, (
                f"{edit.name}: expected {'a' if edit.notes else 'no'} "
                f"note; printed:\n{printed[-600:]}"
            )
        return
    assert error in CHAPTERS_OWN and plain.strip(), (
        f"{edit.name}: {error or 'no error'}, not the chapter's own, in "
        f"cell {index}: {plain[:300]!r}"
    )
    assert HINTS.search(plain), f"{edit.name}: no fix named: {plain!r}"
    assert re.search(edit.refuses, plain, re.S), (
        f"{edit.name}: {error}: {plain[:400]!r}"
    )
    _, refusing = edited_cells(edit)
    assert index in refusing, (
        f"{edit.name}: stopped in cell {index}, not in {sorted(refusing)}, "
        f"the cells it changed or the one that reads them: {plain[:200]!r}"
    )


def test_there_are_at_least_forty_edits_of_every_kind():
    assert len(EDITS) >= 40
    assert len({edit.name for edit in EDITS}) == len(EDITS)
    assert {edit.notebook for edit in EDITS} >= {
        "one_head",
        "many_heads",
        "all_heads",
        "labs",
    }
