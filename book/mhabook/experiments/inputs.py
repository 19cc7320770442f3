"""What a reader types into a page, checked where it is typed.

A page that reads a sentence checks it with `check_sentence`: too few
tokens, or more than the checkpoint reads, is a ValueError that names the
fix; a word the tokenizer changes (lower-cased, punctuation split off, cut
into pieces, unknown) is a printed note, and the page goes on.
`check_order` refuses an order of the tokens that is not a permutation;
`check_self_count` a count of self-attending rows that miscounts, and
`check_diagonal_share` a share of the diagonal that misreads a planted map
(`check_map_readers` runs both).
`word_position` finds a word a cell needs among the tokens, or says why it
is not there: absent from the sentence, cut into pieces, or changed by
lower-casing or punctuation; `word_positions` finds several words of a
sentence at once. `note_unless` prints a note where a claim the
text makes about the default example does not hold for the reader's input,
so that the page runs on and draws the next figure.
"""

import string

import torch

PUNCTUATION = set(string.punctuation)
# A (T, T) map for the checks of one_head's map readers: its rows are not
# symmetric, row 1 ties, and its diagonal averages 1.7 / 3.
PLANTED = torch.tensor([[0.6, 0.3, 0.1], [0.4, 0.4, 0.2], [0.1, 0.2, 0.7]])


def note_unless(holds, message):
    """Print "Note: <message>" unless `holds`; return nothing, so a cell
    that ends with the call shows nothing when the claim holds."""
    if not holds:
        print(f"Note: {message}")


def hand_check(attention):
    """Note what is off when `attention(x, x, v)`, on 3 tokens of d_k = 4
    small enough not to saturate, is not softmax(x x^T / sqrt(4)), and
    when a causal mask lets the first query see a later key."""
    x = torch.arange(12.0).view(1, 3, 4) / 10
    value = x.flip(-1)  # a value unlike the key, to tell the two apart
    try:
        output, weights = attention(x, x, value)  # weights (1, 3, 3)
    except RuntimeError as error:  # a slip in the function's own code
        raise ValueError(
            f"{attention.__name__} stopped inside PyTorch on a query, key "
            f"and value of shape (1, 3, 4) ({error}): check its code; the "
            f"scores are query @ key.transpose(-2, -1), (B, T, d_k) @ "
            f"(B, d_k, T) -> (B, T, T)"
        ) from error
    rows = weights.sum(-1).allclose(torch.ones(1, 3))  # over the keys
    note_unless(rows, "rows must sum to 1: softmax(scores, dim=-1)")
    averaged = output.allclose(weights @ value, atol=1e-6)
    note_unless(averaged, "the output averages the values: weights @ value")
    by_hand = (x @ x.mT / 2).softmax(-1)
    if rows and not weights.allclose(by_hand):  # the scale, from row 0
        raw, logs = (x @ x.mT)[0, 0], weights[0, 0].log()
        found = float((raw[2] - raw[0]) / (logs[2] - logs[0]))
        print(f"Note: scores divided by {found:.2f}, not sqrt(d_k) = 2")
    causal = torch.ones(3, 3, dtype=torch.bool).tril()  # True: may attend
    try:
        first = attention(x, x, x, mask=causal)[1][0, 0]  # key 0 alone
    except TypeError:  # a version without a `mask` argument
        return
    if first[1:].abs().max() >= 1e-6:  # query 0 weighs a later key
        ignored = first.allclose(attention(x, x, x)[1][0, 0])
        slip = (
            "mask ignored: apply it with" if ignored else "inverted mask: use"
        )
        print(f"Note: {slip} masked_fill(~mask, -inf)")


def check_diagonal_share(share):
    """Raise where `share`, a function that gives the mean weight the rows
    of a (T, T) map put on themselves, misreads the planted map."""
    found = share(PLANTED.clone())  # a copy: a slip may write in place
    if abs(found - 1.7 / 3) > 1e-6:  # (0.6 + 0.4 + 0.7) / 3
        raise ValueError(
            f"{share.__name__} gives {found:.3f} on a planted map whose "
            f"diagonal averages 0.567: use the diagonal's mean, not its sum "
            f"or largest, weights.diagonal(dim1=-2, dim2=-1).mean()"
        )


def check_map_readers(share, count):
    """Raise where one_head's `diagonal_share` or `attend_to_self`, read on
    a planted map, gives another number than its docstring promises."""
    check_diagonal_share(share)
    check_self_count(count)


def check_self_count(count):
    """Raise where `count`, a function that counts the rows of a (T, T) map
    whose largest weight is on the diagonal (ties do not count), miscounts
    the planted map."""
    found = count(PLANTED.clone())
    if found != 2:  # rows 0 and 2; row 1 ties with its key 0
        raise ValueError(
            f"{count.__name__} counts {found} rows of a planted map where 2 "
            f"give themselves more than any other weight of their row: use "
            f"masked_fill(diagonal, 0).amax(-1), the largest other weight "
            f"of each row, and diagonal > it"
        )


def uses_qkv(head, x, attention):
    """Whether `head(x)` gives `attention(head.q(x), head.k(x), head.v(x))`,
    output and weights, with q, k and v three modules: a forward that
    passes its own projections, each learned apart."""
    modules = (head.q, head.k, head.v)
    parts = [m(x) for m in modules]  # Q, K, V
    apart = len({id(m) for m in modules}) == 3  # not self.k = self.q
    return apart and all(map(torch.allclose, head(x), attention(*parts)))


def _is_punctuation(text):
    return bool(text) and all(c in PUNCTUATION for c in text)


def _whole_words(tokens, special=()):
    """The tokens that are words of their own: no piece, no punctuation."""
    return [
        t
        for i, t in enumerate(tokens)
        if not t.startswith("##")
        and not (i + 1 < len(tokens) and tokens[i + 1].startswith("##"))
        and not _is_punctuation(t)
        and t not in special
    ]


def _such_as(words, count=4):
    words = list(dict.fromkeys(words))[:count]
    return ", ".join(repr(w) for w in words) if words else "(none)"


def changes(tokenizer, text):
    """How the tokenizer changes each word of `text` (split at spaces),
    in words: [(word, pieces, what it did)], for the words it changes."""
    special = set(tokenizer.all_special_tokens)
    found = []
    for word in text.split():
        pieces = tokenizer.tokenize(word)
        if pieces == [word]:
            continue
        did = []
        if tokenizer.unk_token in pieces:
            did.append("does not know it ([UNK])")
        if any(_is_punctuation(p) for p in pieces) and not _is_punctuation(
            word
        ):
            did.append("splits off its punctuation")
        if any(p.startswith("##") for p in pieces):
            did.append("cuts it into pieces")
        core = "".join(c for c in word if c not in PUNCTUATION)
        kept = "".join(
            p.removeprefix("##")
            for p in pieces
            if not _is_punctuation(p) and p not in special
        )
        if core != core.lower() and kept == core.lower():
            did.append("lower-cases it")
        elif kept and kept != core and not did:
            did.append("changes its letters (accents, case)")
        found.append((word, pieces, " and ".join(did) or "changes it"))
    return found


def check_sentence(tokenizer, text, model=None, at_least=2, at_most=None):
    """The sentence's tokens (no [CLS] or [SEP]), checked for a page.

    Fewer than `at_least` tokens, or more than `at_most` (by default the
    positions the `model` reads, when one is given), is a ValueError that
    says what to type. A word the tokenizer changes gets a printed note,
    and the page goes on with the tokens it made.
    """
    if at_most is None and model is not None:
        at_most = model.config.max_position_embeddings
    if not isinstance(text, str):
        raise TypeError(
            f"text is a {type(text).__name__}; type the sentence as a "
            f'string, such as text = "time flies like an arrow"'
        )
    tokens = tokenizer.tokenize(text)
    added = set(tokenizer.all_special_tokens) - {tokenizer.unk_token}
    special = [t for t in tokens if t in added]  # [CLS], [SEP], [MASK]
    if special:
        raise ValueError(
            f"{text!r} holds {special[0]}, a special token the tokenizer "
            f"adds itself: type the words alone, such as "
            f'"time flies like an arrow"'
        )
    if len(tokens) < at_least:
        raise ValueError(
            f"{text!r} gives {len(tokens)} token(s) and this page needs at "
            f"least {at_least}, one row of attention each: type a sentence "
            f'of at least {at_least} words, such as "time flies like an '
            f'arrow"'
        )
    if at_most is not None and len(tokens) > at_most:
        raise ValueError(
            f"the sentence gives {len(tokens)} tokens and the checkpoint "
            f"reads at most {at_most} (its position embeddings): use a "
            f"shorter sentence"
        )
    changed = changes(tokenizer, text)
    if changed:
        said = "; ".join(
            f"{word!r} -> {', '.join(map(repr, pieces))} (it {did})"
            for word, pieces, did in changed
        )
        print(f"Note: the tokenizer changes some words: {said}.")
        print(f"The figures show its {len(tokens)} tokens, not yours.")
    return tokens


def check_order(order, num_tokens, inputs=None):
    """Refuse an order that does not list each position 0 to T - 1 once,
    or `inputs` (B, T, d) of another T than the tokens' (a ValueError that
    names the fix); return nothing."""
    if inputs is not None and inputs.shape[-2] != num_tokens:
        raise ValueError(
            f"the inputs hold {inputs.shape[-2]} tokens and the text "
            f"{num_tokens}: the text changed after the embeddings were made; "
            f"run the cells again from the one that sets the text"
        )
    order = torch.as_tensor(order)
    if order.is_floating_point() or order.dtype == torch.bool:
        raise ValueError(
            f"order is {order.dtype}: it holds positions, whole numbers; use "
            f"order.long(), or build it from torch.arange or torch.randperm"
        )
    listed = sorted(order.flatten().tolist())
    if listed != list(range(num_tokens)):
        raise ValueError(
            f"order {order.flatten().tolist()} does not list each token "
            f"once (sorted: {listed}): use an order "
            f"that lists 0 to {num_tokens - 1} once, such as "
            f"torch.randperm({num_tokens})"
        )
    if num_tokens > 1 and order.flatten().tolist() == listed:
        raise ValueError(
            f"order {listed} leaves every token in place, so there is no "
            f"reordering to compare: use another order, such as "
            f"torch.arange({num_tokens}).flip(0)"
        )


def word_position(tokens, word, text=None, tokenizer=None, name=None, why=""):
    """The position of `word` among `tokens` (its first occurrence), or a
    ValueError that says why it is not there and what to use instead.

    tokens: a tokenizer's tokens (pass the `tokenizer` and the `text` for
    the best message) or words split at spaces. name: the variable the
    reader sets the word in, named in the fix; why: a sentence saying what
    the cell needs the word for.
    """
    tokens = list(tokens)
    if word in tokens:
        return tokens.index(word)
    special = set(tokenizer.all_special_tokens) if tokenizer else set()
    whole = _whole_words(tokens, special)
    where = f"the sentence {text!r}" if text is not None else "the tokens"
    pieces = tokenizer.tokenize(word) if tokenizer else [word]
    core = "".join(c for c in str(word) if c not in PUNCTUATION)
    in_text = text is not None and str(word).lower() in text.lower()
    same_case = [t for t in tokens if t.lower() == str(word).lower()]
    bare = [t for t in tokens if core and t.strip(string.punctuation) == core]
    if not tokens:
        raise _refusal(
            f"{where} has no tokens" if text else "there is no token",
            "type a sentence that has the word",
            name,
            why,
        )
    unknown = tokenizer.unk_token if tokenizer else None
    if pieces == [unknown]:
        raise _refusal(
            f"the model's vocabulary has no token for {word!r}: the "
            f"tokenizer reads it as {unknown!r}",
            f"use a word it knows, such as {_such_as(whole)}, or a "
            f"checkpoint whose vocabulary has it",
            name,
            why,
        )
    if len(pieces) == 1 and pieces[0] in tokens:
        raise _refusal(
            f"the tokenizer reads {word!r} as {pieces[0]!r} (it lower-cases "
            f"words and splits off punctuation)",
            f"use {pieces[0]!r} instead",
            name,
            why,
        )
    if any(p.startswith("##") for p in pieces) and (
        in_text or all(p in tokens for p in pieces)
    ):
        raise _refusal(
            f"the tokenizer cuts {word!r} into the pieces "
            f"{', '.join(map(repr, pieces))}, so no one token stands for it",
            f"use a word it keeps whole, such as {_such_as(whole)}",
            name,
            why,
        )
    if core and core != word and core in tokens:
        raise _refusal(
            f"{word!r} carries punctuation that the token {core!r} lacks",
            f"use {core!r} instead",
            name,
            why,
        )
    if same_case:
        raise _refusal(
            f"{word!r} is written {same_case[0]!r} in {where}",
            f"use {same_case[0]!r} instead",
            name,
            why,
        )
    if bare:
        raise _refusal(
            f"{word!r} is written {bare[0]!r} in {where}",
            f"use {bare[0]!r}, or drop the punctuation from the sentence",
            name,
            why,
        )
    if len(str(word).split()) > 1:  # a phrase: each role is one token
        raise _refusal(
            f"{word!r} is {len(word.split())} words, where one word is needed",
            f"use one of them, such as {word.split()[-1]!r}",
            name,
            why,
        )
    raise _refusal(
        f"{word!r} is not in {where}",
        f"use words it has, such as {_such_as(whole)}",
        name,
        why,
    )


def word_positions(tokenizer, text, words):
    """The position of each of `words` among the tokens of `text` (read
    without [CLS] and [SEP]), or `word_position`'s ValueError for the first
    word that is not there, which says why and which words to use; a word
    that occurs twice is refused, as its position would be a guess."""
    tokens = tokenizer.tokenize(text)
    positions = [
        word_position(tokens, word, text, tokenizer) for word in words
    ]
    for word in words:
        if tokens.count(word) > 1:
            raise ValueError(
                f"{word!r} occurs {tokens.count(word)} times in {text!r}, "
                f"so which one is meant is a guess: pick words that occur "
                f"once in the sentence"
            )
    if len(set(positions)) < len(positions):
        raise ValueError(
            f"{list(words)} name the same token twice: pick different "
            f"words of {text!r}, one for each role"
        )
    return positions


def _refusal(problem, fix, name, why):
    """The ValueError of `word_position`: the problem, why the cell needs
    the word, and the fix, addressed to the variable `name` if given."""
    why = f" {why.strip()}" if why else ""
    fix = f"For {name}, {fix}" if name else fix[0].upper() + fix[1:]
    return ValueError(f"{problem}.{why} {fix}.")
