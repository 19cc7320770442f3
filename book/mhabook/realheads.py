"""Run a pretrained BERT on a sentence pair and measure its heads (section 4).

Shapes: L layers, h heads, T tokens. `attention` is the (L, h, T, T) stack
of one example's attention weights.
"""

import torch

from .embedding import load_lines


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
    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    sentence_b_start = int(inputs["token_type_ids"][0].argmax())
    return inputs, tokens, sentence_b_start


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


def run_examples(model, tokenizer, texts, pairs=None):
    """Run sentences (or pairs) through `model` in one padded batch.

    Returns one dict per input, cut to its own tokens: `attention`
    (L, h, T, T), `hidden_states` (L + 1 of (1, T, d)), `tokens`,
    `segments` (T,) and the positions of the `special` tokens.
    Padding is masked, so each input gets the weights it gets alone.
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
    if inputs["input_ids"].shape[1] > limit:
        raise ValueError(
            f"an input is {inputs['input_ids'].shape[1]} tokens long, but "
            f"the model's position table holds {limit}: shorten it"
        )
    if "token_type_ids" not in inputs:
        inputs["token_type_ids"] = torch.zeros_like(inputs["input_ids"])
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
                "segments": inputs["token_type_ids"][b, :n],
                "special": torch.tensor(special),
            }
        )
    return examples


def run_example(model, tokenizer, text, pair=None):
    """`run_examples` for one sentence (or pair)."""
    pairs = None if pair is None else [pair]
    return run_examples(model, tokenizer, [text], pairs)[0]


def position(example, word, segment=0):
    """Index of `word` in sentence `segment` (0: A, 1: B) of an example;
    the first one if it occurs twice."""
    for i, token in enumerate(example["tokens"]):
        if token == word and int(example["segments"][i]) == segment:
            return i
    raise ValueError(
        f"{word!r} is not a token of sentence {'AB'[segment]}: "
        f"{example['tokens']}. Use words the tokenizer keeps whole."
    )


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
    query-key pairs.
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
        w = ex["attention"][:, :, words][..., words].flatten(2)  # (L, h, w*w)
        for side in (0, 1):
            keep = other == side
            sums[n, side].index_add_(2, offset[keep], w[..., keep])
            counts[n, side].index_add_(
                0, offset[keep], torch.ones(int(keep.sum()))
            )
    return sums, counts


def own_sentence_ratio(sums, counts):
    """(..., L, h): the mean weight on a word of the own sentence over the
    mean weight on a word of the other sentence at the same offset.

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


def load_table(name):
    """Rows of the tab-separated file book/data/<name>, comments left out."""
    return [line.split("\t") for line in load_lines(name)]


def flies_examples(model, tokenizer, rows):
    """Run claim-2 pairs, rows of (A, A's target, B, B's two targets)."""
    examples = run_examples(
        model, tokenizer, [r[0] for r in rows], [r[2] for r in rows]
    )
    for ex, (_, target_a, _, *targets_b) in zip(examples, rows):
        ex["flies"] = position(ex, "flies", 0), position(ex, "flies", 1)
        ex["targets"] = [position(ex, target_a, 0)] + [
            position(ex, t, 1) for t in targets_b
        ]
        words = is_word(ex)
        pools = [
            (words & (ex["segments"] == s)).nonzero()[:, 0] for s in (0, 1)
        ]
        # where a random target may fall: a word of the sentence, not "flies"
        ex["pools"] = [p[p != f] for p, f in zip(pools, ex["flies"])]
    return examples


def lifts(example, targets):
    """(3, L, h): each claim-2 target's weight over an even spread's,
    for "flies" in A (first target) and in B (the other two)."""
    a = example["attention"]  # (L, h, T, T)
    f_a, f_b = example["flies"]
    rows = [a[:, :, f_a], a[:, :, f_b], a[:, :, f_b]]  # 3 x (L, h, T)
    weights = torch.stack([r[..., t] for r, t in zip(rows, targets)])
    return weights * a.shape[-1]


def claim2_null(examples, draws, generator):
    """(draws, L, h): every head's mean score for random targets, one word
    of A and two different words of B (never "flies" itself)."""
    total = 0
    for ex in examples:
        a = ex["attention"]  # (L, h, T, T)
        pool_a, pool_b = ex["pools"]
        pick_a = pool_a[
            torch.randint(len(pool_a), (draws,), generator=generator)
        ]
        order = torch.rand(draws, len(pool_b), generator=generator).argsort(-1)
        pick_b = pool_b[order[:, :2]]  # (draws, 2): two different words
        f_a, f_b = ex["flies"]
        picked = torch.stack(
            [
                a[:, :, f_a, pick_a],
                a[:, :, f_b, pick_b[:, 0]],
                a[:, :, f_b, pick_b[:, 1]],
            ]
        )  # (3, L, h, draws)
        total = total + picked.min(0).values * a.shape[-1]
    return (total / len(examples)).permute(2, 0, 1)  # (draws, L, h)


def coreference_examples(model, tokenizer, rows):
    """Run Winograd-style sentences, rows of (sentence, pronoun, right,
    wrong)."""
    examples = run_examples(model, tokenizer, [r[0] for r in rows])
    for ex, (_, *words) in zip(examples, rows):
        ex["pronoun"], ex["right"], ex["wrong"] = (
            position(ex, word) for word in words
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
    """(h, T, T): ||alpha_ij * v_j W^O_h||, the size of what query i takes
    from key j through one head (Kobayashi et al., 2020).

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
    with torch.no_grad():
        T = hidden_state.shape[1]
        q = self_attn.query(hidden_state)[0].view(T, h, d_k)[query, head]
        K = self_attn.key(hidden_state)[0].view(T, h, d_k)[:, head]
    products = q * K  # (T, d_k)
    return q, K, products, products.sum(-1) / d_k**0.5
