"""Run a pretrained BERT on a sentence pair and measure its heads (section 4).

Shapes: L layers, h heads, T tokens. `attention` is the (L, h, T, T) stack
of one example's attention weights.
"""

import torch


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
