"""What a reader types, checked where it is typed (issue 32): a sentence
too short or too long is refused with the fix; a word the tokenizer
changes is a note; a word a cell needs is found, or the error says whether
it is absent, cut into pieces, or changed by case or punctuation."""

from types import SimpleNamespace

import pytest
import torch
from transformers import AutoTokenizer

from mhabook.experiments.checkpoint import bundled_path
from mhabook.experiments.inputs import (
    check_order,
    check_self_count,
    check_sentence,
    hand_check,
    note_unless,
    uses_qkv,
    word_position,
    word_positions,
)


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(bundled_path())  # BERT's, uncased


def test_a_plain_sentence_passes_without_a_note(tokenizer, capsys):
    tokens = check_sentence(tokenizer, "time flies like an arrow", at_most=512)
    assert tokens == ["time", "flies", "like", "an", "arrow"]
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("text", ["", "   ", "time"])
def test_too_few_tokens_are_refused_with_what_to_type(tokenizer, text):
    with pytest.raises(ValueError, match="type a sentence of at least 2"):
        check_sentence(tokenizer, text, at_least=2)


def test_more_tokens_than_positions_are_refused(tokenizer):
    with pytest.raises(ValueError, match="at most 8.*use a shorter"):
        check_sentence(tokenizer, "time flies " * 5, at_most=8)
    model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=6))
    with pytest.raises(ValueError, match="reads at most 6 .*use a shorter"):
        check_sentence(tokenizer, "time flies " * 5, model)
    assert len(check_sentence(tokenizer, "time flies " * 3, model)) == 6
    with pytest.raises(TypeError, match="as a string"):
        check_sentence(tokenizer, ["time", "flies"])


def test_each_change_the_tokenizer_makes_is_named(tokenizer, capsys):
    tokens = check_sentence(tokenizer, "Time flies like an arrowhead.")
    assert tokens == ["time", "flies", "like", "an", "arrow", "##head", "."]
    note = capsys.readouterr().out
    assert note.startswith("Note: the tokenizer changes some words")
    assert "'Time' -> 'time' (it lower-cases it)" in note
    assert "(it splits off its punctuation and cuts it into pieces)" in note
    assert "flies" not in note and "its 7 tokens" in note


def test_a_word_is_found_where_it_first_occurs(tokenizer):
    tokens = tokenizer.tokenize("the cat sat on the mat")
    assert word_position(tokens, "the") == 0
    assert word_position(tokens, "mat", "the cat sat on the mat") == 5


@pytest.mark.parametrize(
    "word, said",
    [
        ("dog", r"'dog' is not in the sentence .* Use words it has, such"),
        ("Cat", r"reads 'Cat' as 'cat' .* Use 'cat' instead"),
        ("cat.", r"'cat.' carries punctuation .* Use 'cat' instead"),
        ("catwalk", r"cuts 'catwalk' into the pieces 'cat', '##walk'"),
        ("the cat", r"'the cat' is 2 words, where one .* such as 'cat'"),
    ],
)
def test_a_missing_word_is_told_apart_by_why(tokenizer, word, said):
    text = "the cat sat on the catwalk"
    tokens = tokenizer.tokenize(text)
    with pytest.raises(ValueError, match=said):
        word_position(tokens, word, text, tokenizer)


def test_several_words_are_found_in_order_or_the_first_missing_named(
    tokenizer,
):
    text = "the cat sat on the mat"
    assert word_positions(tokenizer, text, ("sat", "cat", "on")) == [2, 1, 3]
    with pytest.raises(ValueError, match="'the' occurs 2 times.*occur once"):
        word_positions(tokenizer, text, ("sat", "the"))
    with pytest.raises(ValueError, match="'dog' is not in the sentence"):
        word_positions(tokenizer, text, ("cat", "dog", "fish"))


def test_words_split_at_spaces_keep_their_case_and_punctuation():
    tokens = "The cat sat because it was tired.".split()
    with pytest.raises(ValueError, match="'the' is written 'The'.*Use 'The'"):
        word_position(tokens, "the")
    with pytest.raises(ValueError, match="written 'tired.'.*drop the punct"):
        word_position(tokens, "tired")
    with pytest.raises(ValueError, match="carries punctuation.*Use 'cat'"):
        word_position(tokens, "cat,")
    with pytest.raises(ValueError, match="there is no token. Type a sentence"):
        word_position([], "cat")


def test_the_message_names_the_variable_and_why(tokenizer):
    with pytest.raises(
        ValueError, match=r"The heads link it\. For linked, use words"
    ):
        word_position(
            ["time", "flies"], "dog", name="linked", why="The heads link it."
        )


@pytest.mark.parametrize(
    "order", [torch.tensor([2, 0, 1]), [1, 0, 2], torch.arange(3).flip(0)]
)
def test_an_order_that_lists_every_position_once_passes(order):
    assert check_order(order, 3) is None


def test_an_order_that_moves_nothing_is_refused_but_one_token_passes():
    with pytest.raises(ValueError, match=r"torch.arange\(3\).flip\(0\)"):
        check_order(torch.arange(3), 3)
    assert check_order([0], 1) is None  # one token: nothing to move


@pytest.mark.parametrize("order", [[4, 2, 0, 3, 1], [0, 0, 1], [0, 1]])
def test_an_order_that_is_no_permutation_is_refused(order):
    with pytest.raises(ValueError, match="use an order that lists 0 to 2"):
        check_order(order, 3)


def test_a_refused_order_is_quoted_as_typed_and_sorted():
    with pytest.raises(ValueError, match=r"order \[2, 1, 1\] .*sorted: \[1"):
        check_order([2, 1, 1], 3)


@pytest.mark.parametrize("order", [torch.tensor([2.0, 0.0, 1.0]), [2.0, 0, 1]])
def test_an_order_of_floats_is_refused_with_the_cast(order):
    with pytest.raises(ValueError, match=r"order.long\(\)"):
        check_order(order, 3)


def test_a_note_is_printed_only_where_the_claim_fails(capsys):
    assert note_unless(1 < 2, "never shown") is None
    assert note_unless(2 < 1, "the text's example differs") is None
    assert capsys.readouterr().out == "Note: the text's example differs\n"


# The data files a reader may edit (book/mhabook/experiments/embedding.py)


def test_a_data_file_saved_with_a_byte_order_mark_reads_the_same(
    tmp_path, monkeypatch
):
    from mhabook.experiments import embedding

    (tmp_path / "set.txt").write_text("\ufeff# a comment\nfirst\n\nsecond\n")
    monkeypatch.setattr(embedding, "DATA", tmp_path)
    assert embedding.load_lines("set.txt") == ["first", "second"]
    with pytest.raises(FileNotFoundError, match="use one of set.txt"):
        embedding.load_lines("sets.txt")
    (tmp_path / "set.txt").write_text("first\nsecond\nfirst \n")
    with pytest.raises(ValueError, match="set.txt, line 3, repeats line 1"):
        embedding.load_lines("set.txt")  # it would count twice
    assert embedding.load_lines("set.txt", repeats=True)[2] == "first "
    (tmp_path / "set.txt").write_text("Time flies\ntime  flies\n")
    with pytest.raises(ValueError, match="line 2, repeats line 1 .capitals"):
        embedding.load_lines("set.txt")  # the tokenizer reads one sentence
    (tmp_path / "set.txt").write_text("Time flies.\ntime flies\n")
    with pytest.raises(ValueError, match="line 2, repeats line 1 .capitals"):
        embedding.load_lines("set.txt")  # the same words, one sentence
    (tmp_path / "set.txt").write_text("a name [SEP] a name\n")
    with pytest.raises(ValueError, match=r"line 1, holds \[SEP\], which"):
        embedding.load_lines("set.txt")  # a marker, not a word
    (tmp_path / "set.txt").write_text("first\n\ufeff# a second file\nnext\n")
    assert embedding.load_lines("set.txt") == ["first", "next"]  # joined
    (tmp_path / "set.txt").write_text("a sentence\tits paraphrase\n")
    with pytest.raises(ValueError, match="line 1, holds tab-separated col"):
        embedding.load_lines("set.txt")  # a table's row: use load_table
    assert embedding.same_text("the Café ") == embedding.same_text("the cafe")
    # a zero-width space, as pasted from the web: the tokenizer drops it
    assert embedding.same_text("my ph\u200bone") == "my phone"
    (tmp_path / "set.txt").write_text("# only a comment\n\n")
    with pytest.raises(ValueError, match="set.txt has no lines but blank"):
        embedding.load_lines("set.txt")


def test_one_string_is_not_taken_for_a_list_of_sentences():
    from mhabook.experiments.embedding import sentence_embeddings

    with pytest.raises(TypeError, match=r"pass a list of sentences"):
        sentence_embeddings(None, None, "time flies like an arrow")


def test_a_special_token_typed_into_the_sentence_is_refused(tokenizer):
    with pytest.raises(ValueError, match=r"\[SEP\], a special token"):
        check_sentence(tokenizer, "time flies like an arrow [SEP]")


def test_two_roles_given_the_same_word_are_refused(tokenizer):
    text = "time flies like an arrow"
    with pytest.raises(ValueError, match="the same token twice"):
        word_positions(tokenizer, text, ["time", "time"])


def test_a_word_the_vocabulary_lacks_is_named_as_unknown_not_split():
    from transformers import BertTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "time", "like"]
    small = BertTokenizerFast(vocab={w: i for i, w in enumerate(words)})
    text = "time flies like"
    tokens = small.tokenize(text)  # ['time', '[UNK]', 'like']
    with pytest.raises(ValueError, match="vocabulary has no token for"):
        word_position(tokens, "flies", text, small)


def test_a_hash_line_among_the_rows_is_skipped_with_a_note(
    tmp_path, monkeypatch, capsys
):
    from mhabook.experiments import embedding

    (tmp_path / "set.txt").write_text("# header\nfirst\n#1 on my list\nlast\n")
    monkeypatch.setattr(embedding, "DATA", tmp_path)
    assert embedding.load_lines("set.txt") == ["first", "last"]
    out = capsys.readouterr().out
    assert "line 3: # line, skipped" in out and "line 1" not in out


def test_a_data_file_not_saved_as_utf8_names_its_line(tmp_path, monkeypatch):
    from mhabook.experiments import embedding

    (tmp_path / "set.txt").write_bytes(
        "first\nthe caf\u00e9\n".encode("latin-1")
    )
    monkeypatch.setattr(embedding, "DATA", tmp_path)
    with pytest.raises(ValueError, match="set.txt, line 2, is not UTF-8"):
        embedding.load_lines("set.txt")


def test_uses_qkv_wants_three_projections_learned_apart():
    from torch import nn

    from mhabook.layers import AttentionHead, scaled_dot_product_attention

    head, x = AttentionHead(8, 4), torch.randn(1, 3, 8)
    assert uses_qkv(head, x, scaled_dot_product_attention)
    head.k = head.q  # one Linear for queries and keys: the same numbers
    assert not uses_qkv(head, x, scaled_dot_product_attention)
    head.k = nn.Linear(8, 4)
    head.forward = lambda h, mask=None: scaled_dot_product_attention(
        head.q(h), head.q(h), head.v(h)
    )  # a forward that reads q where it should read k
    assert not uses_qkv(head, x, scaled_dot_product_attention)


def _count_by(largest_other, strict=True):
    def attend_to_self(weights):  # the page's, with one slip or none
        diagonal = torch.eye(len(weights), dtype=torch.bool)
        other = largest_other(weights.masked_fill(diagonal, 0))
        own = weights.diagonal()
        return ((own > other) if strict else (own >= other)).sum().item()

    return attend_to_self


def test_check_self_count_passes_the_pages_count_and_names_each_slip():
    check_self_count(_count_by(lambda w: w.amax(-1)))  # the page's
    slips = [
        _count_by(lambda w: w.amax(0)),  # each column's largest
        _count_by(lambda w: w.amax(-1), strict=False),  # ties counted
        lambda weights: len(weights),  # every row
    ]
    for slip in slips:
        with pytest.raises(ValueError, match=r"counts \d rows .* use masked"):
            check_self_count(slip)


def test_check_diagonal_share_passes_the_mean_and_names_a_slip():
    from mhabook.experiments.inputs import check_diagonal_share

    def mean(weights):
        return weights.diagonal(dim1=-2, dim2=-1).mean().item()

    check_diagonal_share(mean)
    for slip in (
        lambda w: w.diagonal().sum().item(),
        lambda w: w.max().item(),
    ):
        with pytest.raises(ValueError, match="averages 0.567: use the diag"):
            check_diagonal_share(slip)


def test_hand_check_names_the_scale_it_found(capsys):
    def attention(q, k, v, scale=2.0):
        weights = (q @ k.mT / scale).softmax(-1)
        return weights @ v, weights

    hand_check(attention)  # sqrt(d_k) = 2 for its d_k = 4: no note
    assert capsys.readouterr().out == ""
    hand_check(lambda q, k, v: attention(q, k, v, scale=3**0.5))  # sqrt(T)
    assert (
        "scores divided by 1.73, not sqrt(d_k) = 2" in capsys.readouterr().out
    )


def test_hand_check_notes_an_inverted_mask(capsys):
    def attention(q, k, v, mask=None, keep=True):
        scores = q @ k.mT / 2
        if mask is not None:  # keep: True marks allowed keys, as taught
            scores = scores.masked_fill(~mask if keep else mask, -torch.inf)
        weights = scores.softmax(-1).nan_to_num()
        return weights @ v, weights

    hand_check(attention)
    assert capsys.readouterr().out == ""
    hand_check(lambda q, k, v, mask=None: attention(q, k, v, mask, False))
    assert "inverted mask: use masked_fill(~mask" in capsys.readouterr().out
    hand_check(lambda q, k, v, mask=None: attention(q, k, v))  # unused
    assert "mask ignored: apply it with masked_fill" in capsys.readouterr().out
    hand_check(lambda q, k, v: attention(q, k, v))  # no mask argument
    assert capsys.readouterr().out == ""


def test_hand_check_says_to_check_a_function_that_fails_on_its_shapes():
    def attention(q, k, v):  # the key transposed on the wrong axes
        weights = (q @ k.transpose(0, 1) / 2).softmax(-1)
        return weights @ v, weights

    with pytest.raises(ValueError, match=r"attention stopped inside PyTorch"):
        hand_check(attention)


def test_hand_check_notes_an_output_that_averages_the_keys(capsys):
    def attention(q, k, v, of_keys=False):  # no mask: that check is skipped
        weights = (q @ k.mT / 2).softmax(-1)
        return weights @ (k if of_keys else v), weights

    hand_check(attention)
    assert capsys.readouterr().out == ""
    hand_check(lambda q, k, v: attention(q, k, v, of_keys=True))
    assert "weights @ value" in capsys.readouterr().out
