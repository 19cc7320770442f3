"""Run a BERT checkpoint (by default the bundled all-MiniLM-L6-v2) on a
sentence pair and measure its heads (sections 4 and 7).

Shapes: L layers, h heads, T tokens. `attention` is the (L, h, T, T) stack
of one example's attention weights.
"""

from dataclasses import dataclass

import torch

from ..checks import _whole  # a whole number, not a bool
from .embedding import DATA, load_lines, same_text
from .inputs import word_position


def encode_pair(tokenizer, model, text_a, text_b):
    """Tokenize a sentence pair for `model`, refusing what it cannot read.

    Returns (inputs, tokens, sentence_b_start).
    """
    # verbose=False: the check below explains a too-long pair better.
    inputs = tokenizer(text_a, text_b, return_tensors="pt", verbose=False)
    limit = model.config.max_position_embeddings
    length = inputs["input_ids"].shape[1]
    if length > limit:
        raise ValueError(
            f"the pair is {length} tokens long, but the model's position "
            f"table holds {limit}: shorten the sentences, or tokenize with "
            f"truncation=True, max_length={limit}"
        )
    if "token_type_ids" not in inputs:
        inputs["token_type_ids"] = segments_from_sep(
            inputs["input_ids"], tokenizer.sep_token_id
        )
    check_segments(model, inputs["token_type_ids"])
    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    sentence_b_start = int(inputs["token_type_ids"][0].argmax())
    return inputs, tokens, sentence_b_start


def check_segments(model, token_type_ids):
    """Refuse sentence pairs for a model with one segment embedding."""
    kinds = getattr(model.config, "type_vocab_size", 2)
    if int(token_type_ids.max()) >= kinds:
        raise ValueError(
            f"this checkpoint has {kinds} segment embedding(s) "
            f"(type_vocab_size={kinds}), so it cannot read a sentence pair "
            f"[CLS] A [SEP] B [SEP]: load a BERT with type_vocab_size=2 "
            f"(set MHA_CHECKPOINT to its folder)"
        )


def segments_from_sep(input_ids, sep_token_id):
    """token_type_ids for [CLS] A [SEP] B [SEP]: 1 after the first [SEP]."""
    is_sep = input_ids == sep_token_id  # (B, T)
    if not torch.all(is_sep.sum(-1) >= 2):
        raise ValueError(
            "expected a sentence pair, [CLS] A [SEP] B [SEP]; found fewer "
            "than two [SEP] tokens. Pass both sentences to the tokenizer."
        )
    after_first = is_sep.int().cumsum(-1) - is_sep.int()  # (B, T)
    return (after_first > 0).long()


def model_attentions(model, inputs):
    """Return (L, h, T, T) attention weights and the hidden states."""
    implementation = model.config._attn_implementation
    if model.config.num_hidden_layers < 1:
        raise ValueError(
            "the model has 0 layers, so no attention to read: choose a "
            "checkpoint with 1 layer or more (MHA_CHECKPOINT)"
        )
    with torch.no_grad():
        outputs = model(
            **inputs, output_attentions=True, output_hidden_states=True
        )
    if not outputs.attentions or outputs.attentions[0] is None:
        raise ValueError(
            f"the model returned no attention weights (attention "
            f"implementation: {implementation!r}). Load it with "
            f"attn_implementation='eager', e.g. "
            f"AutoModel.from_pretrained(name, attn_implementation='eager')"
        )
    attention = torch.stack(outputs.attentions)[:, 0]  # (L, h, T, T)
    return attention, outputs.hidden_states


def within_sentence_share(attention, segments, is_word):
    """(L, h): of the attention words pay to words, the share that stays in
    the query's own sentence, averaged over the two sentences."""
    shares = []
    for segment in (0, 1):
        own = is_word & (segments == segment)  # queries and keys: (T,)
        to_words = attention[:, :, own][..., is_word].sum(-1)  # (L, h, n)
        to_own = attention[:, :, own][..., own].sum(-1)  # (L, h, n)
        shares.append((to_own / to_words).mean(-1))  # (L, h)
    return (shares[0] + shares[1]) / 2


# --- Measuring heads over a set of examples --------------------------------
# An example is one input (a sentence, or a pair) with its (L, h, T, T)
# attention, its tokens and its segment ids (0 for A, 1 for B).


def run_examples(
    model, tokenizer, texts, pairs=None, set_name=None, one_segment=False
):
    """Run sentences (or pairs) through `model` in one padded batch.

    Returns one dict per input, cut to its own tokens: `attention`
    (L, h, T, T), `hidden_states` (L + 1 of (1, T, d)), `tokens`,
    `segments` (T,) and the positions of the `special` tokens.
    Padding is masked, so each input gets the weights it gets alone.
    set_name: the file the inputs come from, named in errors.
    one_segment: the model reads every token as segment A's, a control
    for the segment embedding; `segments` still says which is B's.
    """
    texts = list(texts)
    inputs = tokenizer(
        texts,
        None if pairs is None else list(pairs),
        padding=True,
        return_tensors="pt",
        verbose=False,
    )
    limit = model.config.max_position_embeddings
    longest = inputs["input_ids"].shape[1]
    if longest > limit and set_name:
        raise ValueError(
            f"the longest input of {set_name} is {longest} tokens long, but "
            f"the model's position table holds {limit}: shorten or split "
            f"its longest row, or use a checkpoint with at least {longest} "
            f"positions"
        )
    if longest > limit:
        raise ValueError(
            f"an input is {longest} tokens long, but "
            f"the model's position table holds {limit}: shorten it"
        )
    if "token_type_ids" not in inputs:
        inputs["token_type_ids"] = torch.zeros_like(inputs["input_ids"])
    check_segments(model, inputs["token_type_ids"])
    segments = inputs["token_type_ids"]  # (B, T): 0 for A, 1 for B
    if one_segment:
        inputs["token_type_ids"] = torch.zeros_like(segments)
    with torch.no_grad():
        out = model(
            **inputs, output_attentions=True, output_hidden_states=True
        )
    if not out.attentions or out.attentions[0] is None:
        model_attentions(model, inputs)  # raises the explanatory error
    attention = torch.stack(out.attentions, 1)  # (B, L, h, T, T)
    examples = []
    for b, n in enumerate(inputs["attention_mask"].sum(-1).tolist()):
        ids = inputs["input_ids"][b, :n]
        tokens = tokenizer.convert_ids_to_tokens(ids)
        special = [
            i
            for i, t in enumerate(tokens)
            if t in tokenizer.all_special_tokens
        ]
        examples.append(
            {
                "attention": attention[b, :, :, :n, :n],
                "hidden_states": [h[b : b + 1, :n] for h in out.hidden_states],
                "tokens": tokens,
                "segments": segments[b, :n],
                "special": torch.tensor(special),
            }
        )
    return examples


def attention_block(model, layer):
    """`model.encoder.layer[layer].attention`, or a ValueError that names
    the layers the model has."""
    num_layers = len(model.encoder.layer)
    if not _whole(layer) or not 0 <= layer < num_layers:
        raise ValueError(
            f"layer {layer!r} is not in this model: its layers are numbered "
            f"0 to {num_layers - 1}; choose one of those"
        )
    return model.encoder.layer[layer].attention


def run_example(model, tokenizer, text, pair=None):
    """`run_examples` for one sentence (or pair)."""
    if not isinstance(text, str) or not isinstance(pair, (str, type(None))):
        raise TypeError(
            f"got {text!r} and {pair!r}: give each sentence as a string, "
            f'such as "time flies like an arrow"'
        )
    for name, sentence in (("A", text), ("B", pair)):
        if sentence is not None and not sentence.strip():
            raise ValueError(
                f"sentence {name} is empty: type a sentence of one word or "
                f"more (or pass None for B, to read A alone)"
            )
    pairs = None if pair is None else [pair]
    return run_examples(model, tokenizer, [text], pairs)[0]


def position(example, word, segment=0, set_name=None):
    """Index of `word` in sentence `segment` (0: A, 1: B) of an example;
    the first one if it occurs twice. set_name: the file the example
    comes from, named in the error."""
    if segment not in (0, 1):
        raise ValueError(
            f"segment {segment!r}: use 0 for sentence A or 1 for sentence B"
        )
    for i, token in enumerate(example["tokens"]):
        if token == word and int(example["segments"][i]) == segment:
            return i
    sentence = "AB"[segment]
    words = [
        t
        for t, s in zip(example["tokens"], example["segments"].tolist())
        if s == segment
    ]
    joined = " ".join(words).replace(" ##", "")
    if len(word.split()) > 1:
        why = f"{word!r} is {len(word.split())} words, not one token"
        fix = f"name one word of it, such as {word.split()[-1]!r}"
    elif "[UNK]" in words:
        why = (
            f"the tokenizer does not know a word of sentence {sentence}, "
            f"maybe {word!r} (it reads {words})"
        )
        fix = "use words in the tokenizer's vocabulary"
    elif word != word.lower() and word.lower() in words:
        why = f"the tokenizer lower-cases {word!r} (sentence {sentence} "
        why += f"reads {words})"
        fix = f"write it {word.lower()!r}"
    elif word.lower() in joined.split():
        why = (
            f"the tokenizer cuts {word!r} into pieces "
            f"(sentence {sentence} reads {words})"
        )
        fix = "use a word the tokenizer keeps whole, in lower case"
    else:
        why = f"{word!r} is not in sentence {sentence} (it reads {words})"
        fix = f"put {word!r} in sentence {sentence}"
        if set_name:  # a line of a data file: a misspelling, or a header
            fix = f"spell {word!r} as sentence {sentence} has it"
            fix += ", or put it there"
            fix += "; a header line begins with #"
        else:
            fix += ", or name a word it has"
    where = f"{set_name} needs it: " if set_name else ""
    raise ValueError(f"{why}; {where}{fix}")


def is_word(example):
    """(T,) True where the token is a word, not [CLS] or [SEP]."""
    T = len(example["tokens"])
    return ~torch.isin(torch.arange(T), example["special"])


def within_shares(examples):
    """(N, L, h): `within_sentence_share` of every example (pairs)."""
    return torch.stack(
        [
            within_sentence_share(ex["attention"], ex["segments"], is_word(ex))
            for ex in examples
        ]
    )


def offset_sums(examples):
    """Per example, what each head gives words of the query's own sentence
    and of the other sentence, offset by offset.

    Returns (sums, counts): sums (N, 2, L, h, O) adds the weights that query
    words give key words at each offset j - i (O offsets, centred), in the
    own sentence [:, 0] or the other [:, 1]; counts (N, 2, O) counts those
    query-key pairs. Each weight is taken relative to its query's mean
    weight on the words, so that a head that spreads evenly over the words
    gives 1 everywhere, however long the pair and whatever it gives [CLS]
    and [SEP].
    """
    span = max(len(ex["tokens"]) for ex in examples)
    L, h = examples[0]["attention"].shape[:2]
    sums = torch.zeros(len(examples), 2, L, h, 2 * span + 1)
    counts = torch.zeros(len(examples), 2, 2 * span + 1)
    for n, ex in enumerate(examples):
        words = is_word(ex).nonzero()[:, 0]  # (w,)
        seg = ex["segments"][words]  # (w,)
        offset = (words[None, :] - words[:, None] + span).flatten()  # (w*w,)
        other = (seg[:, None] != seg[None, :]).long().flatten()  # (w*w,)
        w = ex["attention"][:, :, words][..., words]  # (L, h, w, w)
        w = w / w.mean(-1, keepdim=True).clamp(min=1e-12)  # even share: 1
        w = w.flatten(2)  # (L, h, w*w)
        for side in (0, 1):
            keep = other == side
            sums[n, side].index_add_(2, offset[keep], w[..., keep])
            counts[n, side].index_add_(
                0, offset[keep], torch.ones(int(keep.sum()))
            )
    return sums, counts


def own_sentence_ratio(sums, counts):
    """(..., L, h): the mean weight on a word of the own sentence over the
    mean weight on a word of the other sentence at the same offset (each
    weight relative to its query's mean weight on words: `offset_sums`).

    sums, counts: `offset_sums` added over a set of examples, (2, L, h, O)
    and (2, O), with any leading dimensions (such as resamples) in front.
    Offsets where either side never occurs are left out; the others count
    as often as the rarer side occurs, so both means see the same mix of
    distances. 1 means the head does not care which sentence a word is in.
    """
    weight = counts.min(-2).values  # (..., O)
    mean = sums / counts.clamp(min=1)[..., None, None, :]  # (..., 2, L, h, O)
    per_side = (mean * weight[..., None, None, None, :]).sum(
        -1
    )  # (..., 2, L, h)
    return per_side[..., 0, :, :] / per_side[..., 1, :, :]


def best_head(scores):
    """(layer, head) of the largest entry of an (L, h) grid."""
    layer, head = divmod(int(scores.argmax()), scores.shape[1])
    return layer, head


# The columns of each tab-separated set of book/data/, as its header says.
COLUMNS = {
    "claim1_pairs.tsv": ("sentence A", "sentence B"),
    "flies_pairs.tsv": (
        "sentence A",
        'what "flies" is likened to in A',
        "sentence B",
        'the noun before "flies" in B',
        "what the flies like in B",
    ),
    "coreference.tsv": (
        "sentence",
        "the pronoun",
        "the candidate it refers to",
        "the other candidate",
    ),
    "paraphrases.tsv": ("sentence", "paraphrase", "unrelated partner"),
    "noun_phrases.tsv": ("sentence", "a noun phrase of it"),
}


# Sets whose sentences the gallery also reads one by one: a sentence in
# two rows would sit in both halves.
SINGLE = ("claim1_pairs.tsv",)
# Sets whose rows hold a sentence once: a partner equal to the paraphrase
# would be a row no model can get right.
DISTINCT = (*SINGLE, "paraphrases.tsv")
# Sets of twins: each sentence differs from its twin in a word or two, so a
# sentence written twice (its labels flipped) is no twin.
TWINS = ("coreference.tsv",)


class Row(list):
    """One row of a table: its columns, and `line`, its line in the file."""

    line = None


def where_row(set_name, row):
    """`set_name` and, for a row of `load_table`, its line: for errors."""
    line = getattr(row, "line", None)
    return f"{set_name}, line {line}," if set_name and line else set_name


def load_table(name):
    """Rows of the tab-separated file book/data/<name>, comments left out,
    each a `Row` that knows its line. Raises a ValueError naming the file,
    the line and the expected columns when a row of a set in `COLUMNS` has
    another number of columns, or an empty column, or repeats a row."""
    load_lines(name, repeats=True, table=True)  # a missing file, or none
    columns = COLUMNS.get(name)
    headers = {w.lower() for c in columns or () for w in (c, *c.split())}
    lines = (DATA / name).read_text(encoding="utf-8-sig").splitlines()
    rows, keys = [], []  # keys: each row's sentences, as `same_text` reads
    for number, line in enumerate(lines, 1):
        line = line.replace("\ufeff", "")  # a mark where two files joined
        if not line.strip() or line.strip()[0] == "#":
            continue
        row = Row(cell.strip() for cell in line.split("\t"))  # stray spaces
        row.line = number
        if columns and len(row) != len(columns):
            raise ValueError(
                f"book/data/{name}, line {number}, has {len(row)} "
                f"tab-separated column(s) where {len(columns)} are expected "
                f"({'; '.join(columns)}): {line!r}. Separate the columns "
                f"with one tab each, with no tab inside a column"
            )
        named = sum(c.lower() in headers for c in row)
        first = not rows and 2 * named >= len(row)  # above the rows: half
        if columns and (named == len(row) or first):
            raise ValueError(
                f"book/data/{name}, line {number}, looks like a header: "
                f"{line!r}. Start it with # to make it a comment"
            )
        noted = [cell for cell in row if "#" in cell]  # a comment after it
        if noted:
            raise ValueError(
                f"book/data/{name}, line {number}, holds a comment after its "
                f"columns ({noted[0]!r}): put a comment on a line of its own, "
                f"starting with #"
            )
        empty = [i for i, cell in enumerate(row) if not cell]
        if empty:
            column = columns[empty[0]] if columns else f"column {empty[0] + 1}"
            raise ValueError(
                f"book/data/{name}, line {number}, has an empty column "
                f"({column}): {line!r}. Write it in, or delete the line"
            )
        key = [same_text(c) for c in row]  # capitals, accents, spaces aside
        seen = [r for r, k in zip(rows, keys) if k == key]
        if seen:
            raise ValueError(
                f"book/data/{name}, line {number}, repeats line "
                f"{seen[0].line}: a repeated row could both choose a head and "
                f"score it. Delete one of them"
            )
        if name in DISTINCT and len(set(key)) < len(row):
            raise ValueError(
                f"book/data/{name}, line {number}, holds one sentence twice: "
                f"{line!r}. Each column needs a sentence of its own; write "
                f"another"
            )
        again = [
            r for r, k in zip(rows, keys) if name in TWINS and k[0] == key[0]
        ]
        if again:
            raise ValueError(
                f"book/data/{name}, line {number}, repeats the sentence of "
                f"line {again[0].line}: a twin differs from its partner in a "
                f"word or two, which flips the answer. Change a word"
            )
        twice = [
            r
            for r, k in zip(rows, keys)
            if name in SINGLE and set(k) & set(key)
        ]
        if twice:
            raise ValueError(
                f"book/data/{name}, line {number}, repeats a sentence of "
                f"line {twice[0].line}: each sentence is also read alone, "
                f"so it could both choose a head and score it. Write "
                f"another sentence"
            )
        rows.append(row)
        keys.append(key)
    return rows


def check_template(row, set_name=None):
    """Refuse a claim-2 row that is not built like the source's pair: in A,
    "... flies like a <A's target>"; in B, "<B's first target> flies like a
    <B's second target>", the "a" optional. The pages argue from those
    places. Capitals do not count: the words are compared in lower case."""
    a, target_a, b, first_b, second_b = (part.casefold() for part in row)
    words_a, words_b = a.split(), b.split()
    places = "flies" in words_a and "flies" in words_b
    if places:
        i, j = words_a.index("flies"), words_b.index("flies")
        places = (
            i >= 1  # a word before "flies": the rival the pages name
            and words_a[i + 1 : i + 2] == ["like"]
            and target_a in words_a[i + 2 : i + 4]
            and target_a not in words_a[:i]  # where the rival word stands
            and j >= 1
            and words_b[j - 1 : j + 2] == [first_b, "flies", "like"]
            and second_b in words_b[j + 2 : j + 4]
            and second_b not in words_b[:j]
        )
    if not places:
        raise ValueError(
            f"{where_row(set_name, row) or 'a row'} is not built like the "
            f"source's pair ('time flies like an arrow' / 'fruit flies like "
            f"a banana': a word before 'flies' in A, A's target one or two "
            f"words after 'like', B's first target just before 'flies', its "
            f"second one or two words after "
            f"'like'), which the pages' argument about places needs: "
            f"{row!r}. Write the pair in that form"
        )


def flies_examples(model, tokenizer, rows, set_name=None):
    """Run claim-2 pairs, rows of (A, A's target, B, B's two targets),
    each built like the source's pair (`check_template`).

    set_name: the file the rows come from, named in errors."""
    examples = run_examples(
        model, tokenizer, [r[0] for r in rows], [r[2] for r in rows], set_name
    )
    for ex, row in zip(examples, rows):
        _, target_a, _, *targets_b = row
        where = where_row(set_name, row)

        def at(word, segment, ex=ex, where=where):
            return position(ex, word, segment, where)

        ex["flies"] = at("flies", 0), at("flies", 1)
        ex["targets"] = [at(target_a, 0)] + [at(t, 1) for t in targets_b]
        ex["like_b"] = at("like", 1)  # B's verb: "fruit flies like a banana"
        check_template(row, set_name)  # its words are there: are their places?
    return examples


def word_lifts(example):
    """(L, h, T, T): each key's lift, its share of the query's weight on
    words ([CLS] and [SEP] left out, where many heads park attention)
    times the number of words n. An even spread over the words gives 1;
    [CLS] and [SEP] get 0."""
    words = is_word(example)  # (T,)
    on_words = example["attention"] * words  # (L, h, T, T)
    return on_words / on_words.sum(-1, keepdim=True) * words.sum()


def lifts(example, targets):
    """(3, L, h): each claim-2 target's `word_lifts`, for "flies" in A
    (first target) and in B (the other two)."""
    a = word_lifts(example)  # (L, h, T, T)
    f_a, f_b = example["flies"]
    rows = [a[:, :, f_a], a[:, :, f_b], a[:, :, f_b]]  # 3 x (L, h, T)
    return torch.stack([r[..., t] for r, t in zip(rows, targets)])


def coreference_examples(model, tokenizer, rows, set_name=None):
    """Run Winograd-style sentences, rows of (sentence, pronoun, right,
    wrong). set_name: the file the rows come from, named in errors."""
    examples = run_examples(
        model, tokenizer, [r[0] for r in rows], set_name=set_name
    )
    for ex, row in zip(examples, rows):
        where = where_row(set_name, row)
        for role, word in zip(("pronoun", "candidate", "candidate"), row[1:]):
            if ex["tokens"].count(word) > 1:
                raise ValueError(
                    f"{where} the {role} {word!r} occurs "
                    f"{ex['tokens'].count(word)} times in {row[0]!r}, and the "
                    f"test reads the first: write the sentence with it once"
                )
        ex["pronoun"], ex["right"], ex["wrong"] = (
            position(ex, word, 0, where) for word in row[1:]
        )
    return examples


def referent_accuracy(examples, flips=None):
    """(L, h): the share of examples in which the pronoun gives more weight
    to its referent than to the other candidate (Clark et al.'s measure).

    flips: (draws, N) bool, swap the two candidates of the examples where
    it is True (a shuffled-label null); then returns (draws, L, h).
    """
    wins = torch.stack(
        [
            ex["attention"][:, :, ex["pronoun"], ex["right"]]
            > ex["attention"][:, :, ex["pronoun"], ex["wrong"]]
            for ex in examples
        ]
    )  # (N, L, h)
    if flips is None:
        return wins.float().mean(0)
    return (wins[None] ^ flips[:, :, None, None]).float().mean(1)


def weighted_norms(attention_block, hidden_state, alpha):
    """(h, T, T): ||alpha_tj * v_j W^O_i||, the size of what query t takes
    from key j through head i (Kobayashi et al., 2020).

    attention_block: a BERT layer's `attention` (self + output);
    hidden_state: (1, T, d), what enters the layer; alpha: (h, T, T), that
    layer's attention weights for this input.
    """
    h = attention_block.self.num_attention_heads
    d_k = attention_block.self.attention_head_size
    with torch.no_grad():
        _, T, d = hidden_state.shape
        v = attention_block.self.value(hidden_state)[0]  # (T, d), with bias
        v = v.view(T, h, d_k)  # (T, h, d_k)
        w_o = attention_block.output.dense.weight.view(d, h, d_k)
        moved = torch.einsum("thk,dhk->htd", v, w_o)  # (h, T, d)
    return alpha * moved.norm(dim=-1)[:, None, :]  # (h, T, T)


def query_key_products(attention_block, hidden_state, head, query):
    """For one head and query token: q (d_k,), the keys K (T, d_k), the
    elementwise products q * k_j (T, d_k) and the scaled scores (T,)."""
    self_attn = attention_block.self
    h = self_attn.num_attention_heads
    d_k = self_attn.attention_head_size
    T = hidden_state.shape[1]
    if not 0 <= head < h:
        raise ValueError(
            f"head {head} does not exist: this layer has heads 0-{h - 1}; "
            f"pick a head in that range"
        )
    if not -T <= query < T:
        raise ValueError(
            f"query {query} is not a position of the {T} tokens: pick one "
            f"in 0-{T - 1}"
        )
    with torch.no_grad():
        q = self_attn.query(hidden_state)[0].view(T, h, d_k)[query, head]
        K = self_attn.key(hidden_state)[0].view(T, h, d_k)[:, head]
    products = q * K  # (T, d_k)
    return q, K, products, products.sum(-1) / d_k**0.5


def query_of(model, tokenizer, text, word, layer):
    """(place, query): where `word` stands among the tokens of `text`, read
    alone, and its query in every head of `layer` (d,), the heads side by
    side, from the layer's input; or a ValueError naming the fix."""
    ex = run_example(model, tokenizer, text)
    place = word_position(ex["tokens"], word, text, tokenizer)
    block = attention_block(model, layer)
    with torch.no_grad():
        return place, block.self.query(ex["hidden_states"][layer][0, place])


# --- The evaluation sets and the tests of the source's claims --------------
# Each test chooses on the even rows of a set and confirms on the odd rows,
# and draws its random baselines from its own seeded generator, so every
# page that runs a test gets the same numbers.

MIN_ROWS = 8  # the fewest rows of a set that `load_sets` reads
SETS = {
    "pairs": "claim1_pairs.tsv",
    "flies": "flies_pairs.tsv",
    "pronouns": "coreference.tsv",
    "phrases": "noun_phrases.tsv",
}


def set_path(key):
    """The file of an evaluation set, as the errors name it."""
    return f"book/data/{SETS[key]}"


def check_twins(rows, set_name):
    """Refuse coreference rows that do not pair into twins: rows 0 and 1,
    2 and 3, ... share the pronoun and swap the two candidates."""
    if len(rows) % 2:
        raise ValueError(
            f"{set_name} has {len(rows)} sentences; its sentences come in "
            f"twins, so add the missing twin or delete the one left alone"
        )
    for row in rows:
        if same_text(row[2]) == same_text(row[3]):
            raise ValueError(
                f"{set_name}, line {row.line}, names {row[2]!r} as both "
                f"candidates: a head cannot be right on it. Use two "
                f"different nouns of the sentence"
            )
    for first, second in zip(rows[0::2], rows[1::2]):
        if not (first[1] == second[1] and first[2:] == second[:1:-1]):
            lines = f"lines {first.line} and {second.line}"
            raise ValueError(
                f"{set_name}, {lines}, are not twins: twins share the pronoun "
                f"and swap the two candidates ({first[1:]} and "
                f"{second[1:]}); keep each sentence next to its twin"
            )


def pair_columns():
    """[sentences A, sentences B]: the two columns of the sentence pairs
    of claim 1 (book/data/claim1_pairs.tsv), each a list."""
    return [list(column) for column in zip(*load_table(SETS["pairs"]))]


def load_sets(model, tokenizer):
    """(pairs, flies, pronouns): the three evaluation sets of book/data/,
    run through `model`. Raises a ValueError that names the set when the
    tokenizer splits a word the set needs whole, or a set's longest input
    does not fit the model's position table."""
    pairs = run_examples(model, tokenizer, *pair_columns(), set_path("pairs"))
    flies = flies_examples(
        model, tokenizer, load_table(SETS["flies"]), set_path("flies")
    )
    rows = load_table(SETS["pronouns"])
    pronouns = coreference_examples(  # first: it names a misspelt word
        model, tokenizer, rows, set_path("pronouns")
    )
    check_twins(rows, set_path("pronouns"))
    sets = zip(("pairs", "flies", "pronouns"), (pairs, flies, pronouns))
    for key, examples in sets:
        if len(examples) < MIN_ROWS:  # halves of 4: intervals need a few
            raise ValueError(
                f"{set_path(key)} has {len(examples)} rows: each test chooses "
                f"a head on half of a set and scores it on the other half, so "
                f"keep at least {MIN_ROWS} rows (add rows back)"
            )
    return pairs, flies, pronouns


def halves(items):
    """(even rows, odd rows): the rows that choose, the rows that confirm."""
    return items[0::2], items[1::2]


def twin_halves(pronouns):
    """`halves` of the pronoun sentences, keeping each twin together."""
    twins = [pronouns[i : i + 2] for i in range(0, len(pronouns), 2)]
    choose, confirm = halves(twins)
    return [ex for t in choose for ex in t], [ex for t in confirm for ex in t]


def resample_counts(n, draws, generator):
    """(draws, n): how often each of n examples is drawn in each bootstrap
    resample (n draws with replacement)."""
    drawn = torch.randint(n, (draws, n), generator=generator)
    return torch.zeros(draws, n).scatter_add_(1, drawn, torch.ones(draws, n))


def resampled_ratios(sums, counts, times):
    """(draws, L, h): `own_sentence_ratio` of each bootstrap resample."""
    return own_sentence_ratio(
        torch.einsum("rn,n...->r...", times, sums),
        torch.einsum("rn,n...->r...", times, counts),
    )


# A head favours its own sentence only by a margin fixed in advance: at
# least 10% more weight on a word of it. Random weights come within 1% of
# an even ratio, where a tight interval alone would count them.
MIN_RATIO = 1.1


def claim1_test(pairs, draws=1000, seed=0, bar=MIN_RATIO):
    """Claim 1 (attention stays within the sentence) on the pairs.

    Returns a dict: `within` (N, L, h) the raw share; `ratio_all`,
    `ratio_choose`, `ratio_confirm` (L, h) the own/other ratio at equal
    offset on all pairs, the even and the odd; `low`, `high` a 95%
    bootstrap interval of the heads' geometric-mean ratio; `confirm_low`
    (L, h) each head's 2.5% bootstrap point on the odd pairs and
    `confirm_high` its 97.5% point; `replicated` (L, h) heads above `bar`
    on the even pairs whose odd-pair interval lies above it, `reversed`
    those below 1 / `bar` whose interval lies below it (they favour the
    other sentence); `halves_r` the correlation of the halves' log ratios.
    """
    generator = torch.Generator().manual_seed(seed)
    sums, counts = offset_sums(pairs)
    even, odd = slice(0, None, 2), slice(1, None, 2)
    result = {
        "within": within_shares(pairs),
        "ratio_all": own_sentence_ratio(sums.sum(0), counts.sum(0)),
        "ratio_choose": own_sentence_ratio(
            sums[even].sum(0), counts[even].sum(0)
        ),
        "ratio_confirm": own_sentence_ratio(
            sums[odd].sum(0), counts[odd].sum(0)
        ),
    }
    times = resample_counts(len(pairs), draws, generator)
    mean_ratio = resampled_ratios(sums, counts, times).log().mean((1, 2)).exp()
    result["low"], result["high"] = mean_ratio.quantile(
        torch.tensor([0.025, 0.975])
    )
    odd_times = resample_counts(len(sums[odd]), draws, generator)
    odd_ratios = resampled_ratios(sums[odd], counts[odd], odd_times)
    result["confirm_low"] = odd_ratios.quantile(0.025, dim=0)  # (L, h)
    result["confirm_high"] = odd_ratios.quantile(0.975, dim=0)  # (L, h)
    result["replicated"] = (result["ratio_choose"] > bar) & (
        result["confirm_low"] > bar
    )
    result["reversed"] = (result["ratio_choose"] < 1 / bar) & (
        result["confirm_high"] < 1 / bar
    )
    logs = torch.stack(
        [
            result["ratio_choose"].flatten().log(),
            result["ratio_confirm"].flatten().log(),
        ]
    )
    one_head = logs.shape[1] < 2  # a correlation needs two heads
    result["halves_r"] = (
        torch.tensor(float("nan")) if one_head else torch.corrcoef(logs)[0, 1]
    )
    return result


def correlation_bar(n):
    """About the size a correlation of n unrelated pairs of numbers stays
    under 95% of the time (two-sided): 1.96 / sqrt(n - 1); infinite for
    one head, where no correlation can be measured."""
    return 1.96 / (n - 1) ** 0.5 if n > 1 else float("inf")


def mean_interval(values, draws=1000, seed=0):
    """(low, high): a 95% bootstrap interval of the mean of `values` (N,)."""
    generator = torch.Generator().manual_seed(seed)
    times = resample_counts(len(values), draws, generator)
    means = times @ values / len(values)  # (draws,)
    return tuple(means.quantile(torch.tensor([0.025, 0.975])).tolist())


def first_searched_layer(num_layers):
    """Claim 2 searches layers from 1 on: a layer-0 query is made from one
    token's embedding, position and segment, before any context."""
    return 1 if num_layers > 1 else 0


def twin_flips(draws, n_sentences, generator):
    """(draws, n_sentences): swap the labels of whole twins at random."""
    flips = torch.rand(draws, n_sentences // 2, generator=generator) < 0.5
    return flips.repeat_interleave(2, dim=1)


def twin_null_bar(wins, draws, generator):
    """(...): the 95% point of each head's accuracy when whole twins'
    labels are swapped at random. wins: (..., N) bool, twins adjacent.

    A swap turns a twin that is right twice into one wrong twice and back,
    and leaves a twin with one right answer as it is; so the number of
    twins right twice is drawn as a fair binomial of those that can
    change, which is the swap itself, without drawing every swap."""
    per_twin = wins.unflatten(-1, (-1, 2)).sum(-1)  # (..., N / 2): 0, 1, 2
    mixed = (per_twin == 1).sum(-1).float()  # (...,)
    can_change = (per_twin != 1).sum(-1).float()[..., None]  # (..., 1)
    counts = can_change.expand(*can_change.shape[:-1], draws).contiguous()
    twice = torch.binomial(counts, torch.full_like(counts, 0.5), generator)
    swapped = (mixed[..., None] + 2 * twice) / wins.shape[-1]  # (..., draws)
    return swapped.quantile(0.95, dim=-1)


def wins_of(examples):
    """(L, h, N) bool: the pronoun gives its referent more weight than the
    other candidate, per head and sentence."""
    return torch.stack(
        [
            ex["attention"][:, :, ex["pronoun"], ex["right"]]
            > ex["attention"][:, :, ex["pronoun"], ex["wrong"]]
            for ex in examples
        ],
        -1,
    )


def pronoun_test(pronouns, draws=1000, seed=0):
    """Does a head find the pronoun's referent (Clark et al.'s measure)?

    Heads are ranked on the even twins, against the best head under
    whole-twin label swaps; the best ones (with ties) are confirmed on the
    odd twins, each against its own swapped-label null. Returns a dict.
    """
    generator = torch.Generator().manual_seed(seed)
    choose, confirm = twin_halves(pronouns)
    accuracy = referent_accuracy(choose)  # (L, h)
    held_out = referent_accuracy(confirm)
    tied = (accuracy == accuracy.max()).nonzero().tolist()
    swapped = referent_accuracy(
        choose, twin_flips(draws, len(choose), generator)
    )  # (draws, L, h)
    bar_confirm = twin_null_bar(wins_of(confirm), draws, generator)  # (L, h)
    first_right = sum(ex["right"] < ex["wrong"] for ex in pronouns) / len(
        pronouns
    )
    return {
        "accuracy": accuracy,
        "held_out": held_out,
        "tied": tied,
        "bar_choose": swapped.flatten(1).max(-1).values.quantile(0.95),
        "bar_confirm": bar_confirm,
        "margin": max(
            float(held_out[t] - bar_confirm[t]) for t in map(tuple, tied)
        ),
        "majority": max(first_right, 1 - first_right),
        "n_choose": len(choose),
        "n_confirm": len(confirm),
    }


def check_rate(p):
    """Refuse a rate that is not a chance in [0, 1], such as 80 for 80%."""
    if not 0 <= float(p) <= 1:
        raise ValueError(
            f"the head's rate is {p}, not a chance between 0 and 1: pass "
            f"the share of sentences it gets right, 0.8 for 80%"
        )


def detection_power(p, n_sentences, sims=2000, draws=1000, seed=0):
    """The share of simulated heads, right on each sentence with chance
    `p`, that pass the held-out test: more than the 95% point of their own
    whole-twin label-swap null, on `n_sentences` sentences (twins)."""
    check_rate(p)
    generator = torch.Generator().manual_seed(seed)
    wins = torch.rand(sims, n_sentences, generator=generator) < p
    bar = twin_null_bar(wins, draws, generator)  # (sims,)
    return float((wins.float().mean(-1) > bar).float().mean())


def special_shares(model, examples):
    """(by_weight, by_norm), each (L,): the share of attention on [CLS] and
    [SEP], measured by weight and by the size of what each link moves
    (`weighted_norms`), averaged over heads, queries and the examples."""
    L = len(model.encoder.layer)
    by_weight, by_norm = torch.zeros(L), torch.zeros(L)
    for i, block in enumerate(model.encoder.layer):
        for ex in examples:
            alpha = ex["attention"][i]  # (h, T, T)
            moved = weighted_norms(
                block.attention, ex["hidden_states"][i], alpha
            )
            moved = moved / moved.sum(-1, keepdim=True)  # rows sum to 1
            by_weight[i] += alpha[..., ex["special"]].sum(-1).mean()
            by_norm[i] += moved[..., ex["special"]].sum(-1).mean()
    return by_weight / len(examples), by_norm / len(examples)


def share_on(examples, word):
    """(L,): the share of attention on the token `word` (say "[SEP]"),
    per layer, averaged over heads, queries and the examples."""
    return torch.stack(
        [
            ex["attention"][
                ..., [i for i, t in enumerate(ex["tokens"]) if t == word]
            ]
            .sum(-1)
            .mean((-1, -2))
            for ex in examples
        ]
    ).mean(0)


# --- testing_heads: every measurement of the page, in one call -------------
# Claim 2 is tested on the held-out (odd) pairs in three ways, each a
# per-pair number with a 95% bootstrap interval of its mean: the score (the
# smallest of the three lifts, above 1 when every target gets more than an
# even share); two contrasts that ask the claim's own question (does a
# target get more from its own sentence's "flies" than from the other
# "flies"?); and rivals (does a target beat other content words?).


@dataclass(frozen=True)
class Estimate:
    """A mean over held-out pairs, with a 95% bootstrap interval."""

    values: torch.Tensor  # (N,): one number per pair
    low: float
    high: float

    @classmethod
    def of(cls, values, seed=0):
        values = torch.as_tensor(values, dtype=torch.float32)
        return cls(values, *mean_interval(values, seed=seed))

    @property
    def mean(self):
        return float(self.values.mean())

    def count_above(self, bar):
        """How many pairs are above `bar`."""
        return int((self.values > bar).sum())


def flies_measures(example, layer, head):
    """(7,): what one claim-2 pair says about one head, as lifts.

    0. the score: the smallest of the three targets' lifts (`lifts`);
    1. contrast A: the lift "flies" in A gives A's target, minus the lift
       "flies" in B gives that same word;
    2. contrast B: for each of B's two targets, the lift from "flies" in B
       minus the lift from "flies" in A; the smaller of the two;
    3. rival A: A's target minus the stronger of two rivals, A's subject
       (the token before "flies") and B's first target;
    4. rival B: B's weaker target minus B's verb, "like";
    5. A's target minus A's subject alone, and 6. minus B's first target
       alone: rivals named in advance, so that, unlike 3, no choice of the
       stronger favours them.
    Each lift is a share of its query's weight on words (`word_lifts`).
    """
    row = word_lifts(example)[layer, head]  # (T, T)
    f_a, f_b = example["flies"]
    target_a, *targets_b = example["targets"]

    def lift(query, key):
        return row[query, key]

    b_lifts = torch.stack([lift(f_b, t) for t in targets_b])
    own = lift(f_a, target_a)
    subject, first_b = lift(f_a, f_a - 1), lift(f_a, targets_b[0])
    return torch.stack(
        [
            torch.min(own, b_lifts.min()),
            own - lift(f_b, target_a),
            min(lift(f_b, t) - lift(f_a, t) for t in targets_b),
            own - torch.max(subject, first_b),
            b_lifts.min() - lift(f_b, example["like_b"]),
            own - subject,
            own - first_b,
        ]
    )


@dataclass(frozen=True)
class FliesTest:
    """One head on the held-out claim-2 pairs (`flies_measures`)."""

    layer: int
    head: int
    chosen: float  # its mean score on the pairs that chose it
    score: Estimate  # the smallest of the three lifts; 1 is an even share
    contrast_a: Estimate  # A's target: from "flies" in A minus from B's
    contrast_b: Estimate  # B's targets: from "flies" in B minus from A's
    rival_a: Estimate  # A's target minus its stronger rival
    rival_b: Estimate  # B's weaker target minus "like"
    rival_subject: Estimate | None = None  # A's target minus A's subject
    rival_first_b: Estimate | None = None  # minus B's first target

    @property
    def pattern_margins(self):
        """Above 0 each when the source's pattern holds, held out: the
        score's interval above 1, both contrasts' intervals above 0."""
        return [self.score.low - 1, self.contrast_a.low, self.contrast_b.low]

    @property
    def pattern_holds(self):
        """The source's pattern, held out: every margin above 0."""
        return all(m > 0 for m in self.pattern_margins)

    @property
    def target_wins(self):
        """'more', 'less' or 'same': A's target against the word just
        before "flies" in A, held out (the difference's interval against
        0; 'same' when it holds 0)."""
        rival = self.rival_subject
        return (
            "more" if rival.low > 0 else "less" if rival.high < 0 else "same"
        )

    @property
    def rows(self):
        """(R, 3): mean, low, high of score - 1 and the differences, in the
        order of `estimates` (R = 7, or 5 without the named rivals)."""
        out = [[e.mean, e.low, e.high] for e in self.estimates]
        out[0] = [v - 1 for v in out[0]]
        return torch.tensor(out)

    @property
    def estimates(self):
        return [
            self.score,
            self.contrast_a,
            self.contrast_b,
            self.rival_a,
            self.rival_b,
        ] + [
            e
            for e in (self.rival_subject, self.rival_first_b)
            if e is not None
        ]


def head8_counts(tests):
    """(pattern, before): of the `FliesTest`s (one per half), how many
    show the source's pattern, and in how many "flies" in A gives the word
    just before it more weight than its target."""
    pattern = sum(t.pattern_holds for t in tests)
    return pattern, checks_won(tests, "less")


def checks_won(tests, outcome):
    """How many of the `FliesTest`s have `target_wins == outcome`: "more"
    counts the checks A's target wins, "less" those the word before wins."""
    return sum(t.target_wins == outcome for t in tests)


def flies_scores(flies):
    """(N, L, h): every head's score on each pair, its smallest lift."""
    return torch.stack(
        [lifts(ex, ex["targets"]).min(0).values for ex in flies]
    )


def flies_test(
    flies, layer=None, head=None, first=0, seed=0, swap=False, stop=None
):
    """A `FliesTest` of the head chosen on the even pairs among layers
    `first` to `stop` - 1 (all from `first` when `stop` is None), or of the
    given `layer`, `head`, on the odd pairs; with `swap`, chosen on the odd
    pairs and tested on the even ones."""
    if len(flies) < 4:
        raise ValueError(
            f"claim 2 needs at least 4 pairs (2 to choose a head, 2 to test "
            f"it); got {len(flies)}: add rows to the set"
        )
    choose, confirm = halves(flies)
    if swap:
        choose, confirm = confirm, choose
    chosen_scores = flies_scores(choose).mean(0)  # (L, h)
    if layer is None:
        layer, head = best_head(chosen_scores[first:stop])
        layer += first
    measures = torch.stack(
        [flies_measures(ex, layer, head) for ex in confirm]
    )  # (held-out pairs, 7)
    return FliesTest(
        layer,
        head,
        float(chosen_scores[layer, head]),
        *(Estimate.of(m, seed) for m in measures.T),
    )


def same_sense_examples(model, tokenizer, rows, set_name=None):
    """Claim-2 pairs whose sentence B repeats sentence A, so that both
    "flies" are verbs: targets A's target in A and, in B, the token before
    "flies" and A's target (where the real B has its two targets)."""
    texts = [r[0] for r in rows]
    examples = run_examples(model, tokenizer, texts, texts, set_name)
    for ex, row in zip(examples, rows):
        where = where_row(set_name, row)

        def at(word, segment, ex=ex, where=where):
            return position(ex, word, segment, where)

        ex["flies"] = at("flies", 0), at("flies", 1)
        ex["targets"] = [
            at(row[1], 0),
            ex["flies"][1] - 1,
            at(row[1], 1),
        ]
        ex["like_b"] = at("like", 1)
    return examples


def place_control(model, tokenizer, test, seed=0):
    """A `FliesTest` of `test`'s head (a `FliesTest`) on the pairs of
    book/data/flies_pairs.tsv with sentence B a copy of A
    (`same_sense_examples`): both "flies" verbs, B's targets where the real
    B's stand. A head that passes here draws the pattern from place."""
    rows, where = load_table(SETS["flies"]), set_path("flies")
    copies = same_sense_examples(model, tokenizer, rows, where)
    return flies_test(copies, layer=test.layer, head=test.head, seed=seed)


@dataclass(frozen=True)
class ClaimOne:
    """Claim 1: attention stays within the sentence (`claim1_test`)."""

    ratio_choose: torch.Tensor  # (L, h) own/other at equal offset, even
    ratio_confirm: torch.Tensor  # (L, h) the same on the odd pairs
    ratio_all: torch.Tensor  # (L, h) on all pairs
    typical: float  # geometric mean of the heads' ratios, all pairs
    low: float  # its 95% bootstrap interval
    high: float
    bar: float  # the margin a head must clear, `MIN_RATIO`
    replicated: int  # heads above `bar`, even; odd-pair interval above it
    reversed: int  # below 1 / `bar`, even; odd-pair interval below it
    candidates: int  # heads above `bar` on the even pairs
    halves_r: float  # correlation of the halves' log ratios over heads
    halves_bar: float  # what it reaches by chance 5% of the time
    within: float  # raw share of word-to-word attention in own sentence
    cls_share: float  # attention on [CLS], all heads and queries
    sep_share: float  # and on [SEP]
    n_heads: int


def claim_one(pairs, seed=0):
    """A `ClaimOne` from the sentence pairs."""
    c1 = claim1_test(pairs, seed=seed)
    ratio_all = c1["ratio_all"]
    return ClaimOne(
        ratio_choose=c1["ratio_choose"],
        ratio_confirm=c1["ratio_confirm"],
        ratio_all=ratio_all,
        typical=float(ratio_all.log().mean().exp()),
        low=float(c1["low"]),
        high=float(c1["high"]),
        bar=MIN_RATIO,
        replicated=int(c1["replicated"].sum()),
        reversed=int(c1["reversed"].sum()),
        candidates=int((c1["ratio_choose"] > MIN_RATIO).sum()),
        halves_r=float(c1["halves_r"]),
        halves_bar=correlation_bar(ratio_all.numel()),
        within=float(c1["within"].mean()),
        cls_share=float(share_on(pairs, "[CLS]").mean()),
        sep_share=float(share_on(pairs, "[SEP]").mean()),
        n_heads=ratio_all.numel(),
    )


@dataclass(frozen=True)
class ClaimTwo:
    """Claim 2: "flies" attends to "arrow" in A, "fruit" and "banana" in
    B. Two readings, as the source's picture names no layer: the best head
    of layer 0, and the best of layers 1 and up; each chosen on the even
    pairs and tested on the odd ones, and the other way round."""

    even_scores: torch.Tensor  # (L, h) every head's score, even pairs
    layer0: FliesTest  # the best head of layer 0
    layer0_swapped: FliesTest  # the same search, chosen on the odd pairs
    upper: FliesTest  # the best head of layers 1 and up
    upper_swapped: FliesTest  # the same search, chosen on the odd pairs
    source_tokens: list  # the source's pair (the set's first row)
    source_rows: torch.Tensor  # (2, T) `layer0`'s rows of "flies" in A, B
    source_targets: list  # positions of the pair's three targets
    source_top: list  # the two words "flies" in A weights most
    source_top_sides: list  # the sentence of each, "A" or "B"
    source_top_at: list  # and their positions in `source_tokens`
    n_choose: int
    n_confirm: int
    source_flies: tuple  # positions of "flies" in A and in B


def claim_two(flies, seed=0):
    """A `ClaimTwo` from the claim-2 pairs."""
    first = first_searched_layer(flies[0]["attention"].shape[0])
    layer0 = flies_test(flies, seed=seed, stop=1)
    upper = flies_test(flies, first=first, seed=seed)
    source = flies[0]
    rows = source["attention"][layer0.layer, layer0.head]
    rows = rows[list(source["flies"])]  # (2, T)
    words = rows[0].masked_fill(~is_word(source), -1.0)
    top = words.argsort(descending=True)[:2].tolist()
    return ClaimTwo(
        even_scores=flies_scores(flies)[0::2].mean(0),
        layer0=layer0,
        layer0_swapped=flies_test(flies, seed=seed, swap=True, stop=1),
        upper=upper,
        upper_swapped=flies_test(flies, first=first, seed=seed, swap=True),
        source_tokens=source["tokens"],
        source_rows=rows,
        source_targets=list(source["targets"]),
        source_top=[source["tokens"][i] for i in top],
        source_top_sides=["AB"[int(source["segments"][i])] for i in top],
        source_top_at=top,
        source_flies=tuple(int(i) for i in source["flies"]),
        n_choose=len(flies[0::2]),
        n_confirm=len(flies[1::2]),
    )


def power_curve(p, n_sentences, target=0.8, most=32, sims=2000, seed=0):
    """(sizes, powers), sizes ascending: `detection_power` of a head right
    with chance `p` on 1, 2, 3, ... times `n_sentences` held-out sentences,
    up to the first multiple whose power reaches `target` (or `most`
    times); then, between that multiple and the one before, halving the gap
    in whole twins (2 sentences), the smallest size that reaches `target`
    (power taken to grow with size). `sims` simulated heads each, the same
    draws at every size, so that the curve is smooth."""
    check_rate(p)
    if n_sentences < 2 or n_sentences % 2:
        raise ValueError(
            f"n_sentences is {n_sentences}: pass an even number of held-out "
            f"sentences, whole twins"
        )
    tried = {}

    def power(n):
        if n not in tried:
            tried[n] = detection_power(p, n, sims=sims, seed=seed)
        return tried[n]

    low, high = 0, None
    for times in range(1, most + 1):
        if power(times * n_sentences) >= target:
            high = times * n_sentences
            break
        low = times * n_sentences
    while high is not None and high - low > 2:
        middle = low + (high - low) // 4 * 2  # whole twins
        if power(middle) >= target:
            high = middle
        else:
            low = middle
    sizes = sorted(tried)
    return sizes, [tried[n] for n in sizes]


def smallest_size(sizes, powers, target=0.8):
    """The smallest of `sizes` whose power reaches `target` (None if none
    does): from `power_curve`, the held-out sentences a test needs."""
    return next((n for n, pw in zip(sizes, powers) if pw >= target), None)


@dataclass(frozen=True)
class Pronouns:
    """Does a head find the pronoun's referent, and what could the test
    find? (`pronoun_test`, `detection_power`)"""

    accuracy: torch.Tensor  # (L, h) share right on the even twins
    held_out: torch.Tensor  # (L, h) on the odd twins
    tied: list  # [(layer, head), ...] the best on the even twins
    bar_choose: float  # best head's 95% point under twin swaps, even
    bar_confirm: torch.Tensor  # (L, h) each head's own bar, odd
    margin: float  # the best of `tied`: held out minus its bar
    majority: float  # always answering with the commoner position
    near_half: int  # heads within one sentence of 50%, even twins
    n_choose: int
    n_confirm: int
    clark: float  # the rate of Clark et al.'s head: 0.65
    power: float  # against a head right `clark` of the time, held out
    sizes: list  # held-out sentences tried (`power_curve`), ascending
    powers: list  # the power at each
    detectable: float  # the lowest rate found 80% of the time, held out
    # how often a head at chance (right on half) passes: the test's real
    # false-positive rate, against the nominal 5% (`detection_power`)
    false_alarm: float = float("nan")

    @property
    def needed(self):
        """Held-out sentences for 80% power at `clark`: the smallest size
        tried that reaches it (the largest tried if none does)."""
        return smallest_size(self.sizes, self.powers) or self.sizes[-1]


def pronouns_result(pronouns, clark=0.65, draws=1000, sims=2000, seed=0):
    """A `Pronouns` from the Winograd twins; `sims` simulated heads for
    each power."""
    pt = pronoun_test(pronouns, draws=draws, seed=seed)
    n = pt["n_confirm"]
    sizes, powers = power_curve(clark, n, sims=sims, seed=seed)
    rates = [0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]
    detectable = next(
        (p for p in rates if detection_power(p, n, sims, seed=seed) >= 0.8),
        1.0,
    )
    accuracy = pt["accuracy"]
    return Pronouns(
        accuracy=accuracy,
        held_out=pt["held_out"],
        tied=[tuple(t) for t in pt["tied"]],
        bar_choose=float(pt["bar_choose"]),
        bar_confirm=pt["bar_confirm"],
        margin=float(pt["margin"]),
        majority=float(pt["majority"]),
        near_half=int(((accuracy - 0.5).abs() <= 1 / pt["n_choose"]).sum()),
        n_choose=pt["n_choose"],
        n_confirm=n,
        clark=clark,
        power=powers[sizes.index(n)],
        sizes=sizes,
        powers=powers,
        detectable=detectable,
        false_alarm=detection_power(0.5, n, sims, seed=seed),
    )


@dataclass(frozen=True)
class TestingHeads:
    """Everything the page testing_heads states, from one call."""

    n_pairs: int  # book/data/claim1_pairs.tsv
    n_flies: int  # book/data/flies_pairs.tsv
    n_pronouns: int  # book/data/coreference.tsv
    claim1: ClaimOne
    claim2: ClaimTwo
    pronouns: Pronouns
    by_weight: torch.Tensor  # (L,) share on [CLS] and [SEP], by weight
    by_norm: torch.Tensor  # (L,) and by the size of what links move
    # claim 2's layer-0 head on the same pairs with B a copy of A (both
    # "flies" verbs, B's targets where the real B's stand): a control for
    # place (`same_sense_examples`)
    same_sense: FliesTest | None = None
    # the same control for claim 2's best head above layer 0
    upper_same_sense: FliesTest | None = None
    gallery: list | None = None  # section 4's rows (`jobs.gallery_jobs`)
    # claim 1 with every token read as segment A's: a control for the
    # segment embedding (`run_examples`' one_segment)
    one_segment: ClaimOne | None = None


def testing_results(model, tokenizer, draws=1000, sims=2000, seed=0):
    """`TestingHeads`: the three sets of book/data/ run through `model`,
    every test the page testing_heads reports, and section 4's gallery.
    draws: resamples of each null; sims: simulated heads for each power."""
    if min(draws, sims) < 1:
        raise ValueError(
            f"draws = {draws} and sims = {sims}: each null and each power "
            f"needs 1 or more; use the defaults, 1000 and 2000, or fewer "
            f"for speed (100 and 200)"
        )
    num_layers = model.config.num_hidden_layers
    if num_layers < 2:
        raise ValueError(
            f"this checkpoint has {num_layers} layer; the tests of claim 2 "
            f"compare layer 0 with the layers above it: load a checkpoint "
            f"with at least 2 layers (MHA_CHECKPOINT)"
        )
    pairs, flies, pronouns = load_sets(model, tokenizer)
    one_segment = run_examples(
        model, tokenizer, *pair_columns(), one_segment=True
    )
    by_weight, by_norm = special_shares(model, pairs)
    claim2 = claim_two(flies, seed=seed)
    from .jobs import gallery_jobs  # jobs imports this module

    return TestingHeads(
        n_pairs=len(pairs),
        n_flies=len(flies),
        n_pronouns=len(pronouns),
        claim1=claim_one(pairs, seed=seed),
        claim2=claim2,
        pronouns=pronouns_result(pronouns, draws=draws, sims=sims, seed=seed),
        by_weight=by_weight,
        by_norm=by_norm,
        same_sense=place_control(model, tokenizer, claim2.layer0, seed),
        upper_same_sense=place_control(model, tokenizer, claim2.upper, seed),
        gallery=gallery_jobs(model, tokenizer),
        one_segment=claim_one(one_segment, seed=seed),
    )
