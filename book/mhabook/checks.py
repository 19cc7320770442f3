"""The checks the taught layers call: not part of the lesson.

The layers in `mhabook/layers/` are generated from the pages and read like
the lesson. A reader who edits a page still gets a working layer or an
error that names the fix, because the layers call these checks:

- `takes_config`, a class decorator: the layer takes one config whose
  `hidden_size` splits into `num_attention_heads` whole heads, and refuses
  an input that is not (B, T, d);
- `check_input`, an input of shape (B, T, d) and of the weights' dtype;
- `check_split`, the rule d_k = d / h, with the head counts that fit;
- `check_head`, a head number that the layer has;
- `check_attention_mask` and `check_bool_mask`, masks that are bool and fit;
- `check_targets` and `check_strength`, a hand-built pointer head's;
- `check_weights`, the keys and shapes of weights copied into a layer;
- `check_padding` and `check_num_tokens`, the sizes of the masks;
- `check_qkv`, queries, keys and values whose shapes fit together;
- `check_like_loop`, a batched layer that gives the loop layer's numbers;
- `check_through_w_o`, a layer output that is its heads' through W^O;
- `check_padding_ignored`, padding that leaves the real tokens as alone.

Inside `unchecked()` the checks a forward pass calls do nothing, so that a
timing measures the layers' arithmetic alone (`costs.time_interleaved`).
"""

import contextlib
import functools
import re

import torch

_skipping = False  # True inside `unchecked()`


@contextlib.contextmanager
def unchecked():
    """Skip the checks of a forward pass inside the block: for timing the
    layers, which call some of them once per head. Wrong input then fails
    inside PyTorch, or not at all."""
    global _skipping
    before, _skipping = _skipping, True
    try:
        yield
    finally:
        _skipping = before


def skippable(check):
    """`check`, which returns nothing, skipped inside `unchecked()`."""

    @functools.wraps(check)
    def run(*args, **kwargs):
        if not _skipping:
            check(*args, **kwargs)

    return run


def _whole(n):
    return type(n) is not bool and hasattr(n, "__index__")


def check_split(embed_dim, num_heads):
    """Refuse sizes that are not whole numbers (TypeError) or a width that
    does not split into `num_heads` heads (ValueError naming the nearest
    head counts that do)."""
    if not (_whole(embed_dim) and _whole(num_heads)):
        raise TypeError(
            f"sizes are whole numbers: got {embed_dim!r} and {num_heads!r}; "
            f"use int(...)"
        )
    if num_heads < 1 or embed_dim < 1:
        raise ValueError(
            f"hidden size {embed_dim} and {num_heads} heads: sizes count "
            f"features and heads, so each is at least 1; use positive "
            f"numbers, such as 768 and 12"
        )
    if embed_dim % num_heads:
        fits = [h for h in range(1, embed_dim + 1) if embed_dim % h == 0]
        below = [h for h in fits if h < num_heads][-1:]
        above = [h for h in fits if h > num_heads][:1]
        raise ValueError(
            f"hidden size {embed_dim} does not split into {num_heads} "
            f"heads: {embed_dim} / {num_heads} is not a whole number. "
            f"Use a head count that divides {embed_dim}, such as "
            f"{' or '.join(map(str, below + above))}."
        )


def check_head(head, num_heads):
    """Refuse a head number outside 0 to num_heads - 1, naming the range."""
    if not _whole(head) or not 0 <= head < num_heads:
        raise ValueError(
            f"head {head!r} is not in this layer: its heads are numbered 0 "
            f"to {num_heads - 1}; pick one of those"
        )


def config_sizes(name, args, kwargs):
    """(hidden_size, num_attention_heads) of the one config in `args` or
    `kwargs`, or a TypeError that names the config the layer `name`
    takes; a ValueError where the width does not split into the heads."""
    given = [*args, *kwargs.values()]
    config = given[0] if len(given) == 1 else None
    names = ("hidden_size", "num_attention_heads")
    sizes = [getattr(config, n, None) for n in names]
    if (
        config is not None
        and not isinstance(config, type)
        and all(_whole(n) for n in sizes)
    ):
        check_split(*sizes)
        return tuple(int(n) for n in sizes)
    if isinstance(config, dict):
        fix = f"{name}(BertConfig(**config))"
    elif isinstance(config, type):  # the class, not a config made from it
        fix = f"{name}({config.__name__}()), with the parentheses"
    else:  # the reader's sizes where they are whole, else BERT-base's
        d, h = 768, 12
        if all(
            _whole(n) or isinstance(n, float) and n.is_integer() for n in sizes
        ):
            d, h = (int(n) for n in sizes)
        elif len(args) == 2 and all(_whole(n) for n in args):
            d, h = args
        fix = f"{name}(BertConfig(hidden_size={d}, num_attention_heads={h}))"
    raise TypeError(
        f"{name} takes one config with whole-number hidden_size and "
        f"num_attention_heads (a BertConfig, say), not "
        f"{', '.join(map(repr, given))}: use {fix}"
    )


@skippable
def check_input(hidden_state, embed_dim, dtype=None):
    """Refuse an input that is not (B, T, d), or (given the layer's weights'
    `dtype`) not of that dtype, with the fix in the error."""
    shape = tuple(getattr(hidden_state, "shape", ()))
    tensor = torch.is_tensor(hidden_state)
    if tensor and len(shape) == 3 and shape[-1] == embed_dim:
        if dtype is None or hidden_state.dtype == dtype:
            return
        fix = (
            "hidden_state.float()"
            if dtype == torch.float32
            else f"hidden_state.to({dtype})"
        )
        raise ValueError(
            f"hidden_state is {hidden_state.dtype}, the layer's weights are "
            f"{dtype}: pass {fix}, or convert the layer with "
            f"layer.to(hidden_state.dtype)"
        )
    raise ValueError(
        f"hidden_state is {shape if tensor else type(hidden_state).__name__}"
        f"; the layer takes (B, T, d) with d = {embed_dim}: "
        + (
            "pass a tensor, such as torch.randn(1, 5, d)"
            if not tensor
            else f"give it {embed_dim} features, or build the layer that wide"
            if len(shape) == 3
            else "add the batch axis, hidden_state[None] for a batch of one, "
            "or the token axis, hidden_state[:, None] for one token each"
            if shape[-1:] == (embed_dim,) and len(shape) == 2
            else f"reshape it to (batch, tokens, {embed_dim})"
        )
    )


class _InputCheck:
    """A forward pre-hook: the first input must be (B, T, embed_dim)."""

    def __init__(self, embed_dim):
        self.embed_dim = embed_dim

    def __call__(self, module, args, kwargs):
        hidden_state = args[0] if args else kwargs.get("hidden_state")
        weight = next(module.parameters(), None)  # the layer's dtype
        dtype = None if weight is None else weight.dtype
        check_input(hidden_state, self.embed_dim, dtype)


@skippable
def check_output(name, hidden_state, output, num_heads):
    """Refuse what a layer's forward returned unless it is the input's
    shape (B, T, d), with weights (B, h, T, T) if it returns any."""
    out, weights = output if isinstance(output, tuple) else (output, None)
    B, T, d = hidden_state.shape
    if not torch.is_tensor(out) or tuple(out.shape) != (B, T, d):
        raise ValueError(
            f"{name} returned {tuple(getattr(out, 'shape', ()))}, not the "
            f"input's (B, T, d) = {(B, T, d)}: check how the forward joins "
            f"the heads (transpose(1, 2), then reshape to (B, T, d))"
        )
    expected = (B, num_heads, T, T)
    if torch.is_tensor(weights) and tuple(weights.shape) != expected:
        raise ValueError(
            f"{name} returned weights of shape {tuple(weights.shape)}, not "
            f"(B, h, T, T) = {expected}: check that the forward puts the "
            f"heads on axis 1 (stack(..., dim=1), or a permute to "
            f"(B, h, T, d_k))"
        )


class _OutputCheck:
    """A forward hook: `check_output` on what the layer returned."""

    def __init__(self, num_heads):
        self.num_heads = num_heads

    def __call__(self, module, args, kwargs, output):
        hidden_state = args[0] if args else kwargs.get("hidden_state")
        name = type(module).__name__
        check_output(name, hidden_state, output, self.num_heads)


def _explained(forward, name):
    """`forward`, whose errors inside PyTorch also say where to look: after
    the input checks, such an error comes from the forward's own code."""

    @functools.wraps(forward)
    def run(self, *args, **kwargs):
        try:
            return forward(self, *args, **kwargs)
        except (RuntimeError, IndexError, ValueError) as error:
            value = isinstance(error, ValueError)  # only unpacking's
            slip = "unpack" if value else "size|shape|dim|index"
            if not re.search(slip, str(error)):
                raise  # not a slip of shapes (nor one of the chapter's own)
            loop = name == "MultiHeadAttention"  # its heads one by one
            parts = self.named_modules()  # a hook on a part runs inside too
            hooked = [
                part
                for part, m in parts
                if part and (m._forward_pre_hooks or m._forward_hooks)
            ]
            where = f" or the hook on {hooked[0]}" if hooked else ""
            raise ValueError(
                f"{name}.forward stopped inside PyTorch ({error}). The input "
                f"was (B, T, d), so check the forward's code{where}: compare "
                f"each step's shape with the comment beside it, "
                + (
                    "(B, T, d_k) for each head's output and (B, T, h * d_k) "
                    "for their concatenation"
                    if loop
                    else "(B, h, T, d_k) for each head's Q, K, V and "
                    "(B, h, T, T) for the scores"
                )
            ) from error

    return run


def explains_slips(layer_class):
    """Class decorator: a shape error inside the layer's forward says to
    check the forward's code (`takes_config` does this too)."""
    layer_class.forward = _explained(layer_class.forward, layer_class.__name__)
    return layer_class


def takes_config(layer_class):
    """Class decorator for a layer whose `__init__(self, config)` reads
    `config.hidden_size` and `config.num_attention_heads`.

    Before `__init__` runs, anything but one such config (two sizes, a
    dict, sizes that are not whole numbers) is a TypeError that shows the
    call to make, and a width that does not split into the heads is a
    ValueError that names head counts that fit. Each layer built then
    refuses an input that is not (B, T, d) (a forward pre-hook) and an
    output that is not (B, T, d) with (B, h, T, T) weights (a forward
    hook); an error inside its forward says to check the forward's code.
    """
    init = layer_class.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        embed_dim, num_heads = config_sizes(layer_class.__name__, args, kwargs)
        try:
            init(self, *args, **kwargs)
        except TypeError as error:  # a size like 768 / 12 = 64.0 inside
            if "float" not in str(error):
                raise
            raise TypeError(
                f"{layer_class.__name__}.__init__ passed a float size to a "
                f"layer ({error}): use // for whole sizes, d_k = d // h"
            ) from error
        self.register_forward_pre_hook(
            _InputCheck(embed_dim), with_kwargs=True
        )
        self.register_forward_hook(_OutputCheck(num_heads), with_kwargs=True)

    layer_class.__init__ = __init__
    return explains_slips(layer_class)


def _mask_kind(mask):
    """None for a bool tensor, else a ValueError naming `mask.bool()`."""
    if not torch.is_tensor(mask) or mask.dtype != torch.bool:
        kind = mask.dtype if torch.is_tensor(mask) else type(mask).__name__
        fix = "mask.bool() turns a 0/1 mask into one"
        if (
            torch.is_tensor(mask)
            and mask.is_floating_point()
            and (mask < 0).any()
        ):
            fix = "an additive 0/-inf mask becomes one with mask == 0"
        raise ValueError(
            f"mask is {kind}; pass a bool tensor, True where a query may "
            f"attend ({fix})"
        )


@skippable
def check_attention_mask(mask, scores):
    """Refuse a mask that is not bool, or that does not broadcast to the
    scores (..., T_q, T_k) it masks, with a ValueError that names the fix."""
    _mask_kind(mask)
    scores = getattr(scores, "shape", scores)  # the scores, or their shape
    try:
        fits = torch.broadcast_shapes(mask.shape, scores) == scores
    except RuntimeError:  # the shapes do not broadcast
        fits = False
    if not fits:
        raise ValueError(
            f"mask has shape {tuple(mask.shape)}, which does not fit the "
            f"scores {tuple(scores)}: pass a (T_q, T_k) = "
            f"{tuple(scores[-2:])} mask, or one with their leading axes"
        )


@skippable
def check_bool_mask(mask, batch, num_tokens):
    """Refuse a mask that is not (T, T) or (B, T, T), or not bool."""
    shapes = [(num_tokens, num_tokens), (batch, num_tokens, num_tokens)]
    if tuple(getattr(mask, "shape", ())) not in shapes:
        raise ValueError(
            f"mask has shape {tuple(getattr(mask, 'shape', ()))}; expected "
            f"(T, T) = {shapes[0]} or (B, T, T) = {shapes[1]} for an input "
            f"with B = {batch} and T = {num_tokens}"
        )
    _mask_kind(mask)


def check_targets(targets, strength):
    """Refuse no targets, a pointer target that is not a token position (a
    whole number from 0 to T - 1, or None), or a strength that points
    nowhere (`check_strength`)."""
    num_tokens = len(targets)
    if not num_tokens:
        raise ValueError(
            "targets is empty: give one target per token, such as "
            "list(range(len(tokens))) for a head where each looks at itself"
        )
    for target in targets:
        whole = isinstance(target, int) or getattr(target, "ndim", 1) == 0
        if target is not None and not (whole and 0 <= target < num_tokens):
            raise ValueError(
                f"target {target!r} is not a token position; use 0 to "
                f"{num_tokens - 1} (whole numbers) or None"
            )
    check_strength(strength)


def check_strength(strength):
    """Refuse a pointer strength that is not a number above 0."""
    if not 0 < strength < float("inf"):
        raise ValueError(
            f"strength is {strength}; keep 0 < strength < inf, so that a "
            f"query scores its target above the other keys by a number"
        )


def check_weights(target, weights):
    """Refuse weights whose keys or shapes differ from the state dict
    `target` they are to be copied into; nothing is copied here."""
    if weights.keys() != target.keys():
        missing = sorted(target.keys() - weights.keys())
        unexpected = sorted(weights.keys() - target.keys())
        if unexpected and all(k.endswith(".bias") for k in unexpected):
            raise ValueError(
                f"the layer has no {unexpected[0]}, which the weights hold: "
                f"check that its nn.Linear keeps its bias (no bias=False)"
            )
        fix = "use weights of this kind of layer"
        if any(k.startswith("heads.") for k in unexpected):
            fix = "a loop layer's: use batched_from_loop"
        elif any(k.startswith("heads.") for k in missing):
            fix = "a batched layer's: use loop_from_batched"
        raise ValueError(
            f"keys differ: missing {missing[:4]}, unexpected {unexpected[:4]}"
            f" ({len(missing)} and {len(unexpected)} in all): {fix}"
        )
    for key, value in weights.items():
        if value.shape != target[key].shape:
            raise ValueError(
                f"{key}: shape {tuple(value.shape)} does not fit "
                f"{tuple(target[key].shape)}"
            )


def check_num_tokens(num_tokens):
    """Refuse a sequence length that is not a whole number 0 or more."""
    if not _whole(num_tokens) or num_tokens < 0:
        raise ValueError(
            f"num_tokens is a sequence length, a whole number 0 or more; got "
            f"{num_tokens!r}: pass the number of tokens, such as len(tokens)"
        )


@skippable
def check_qkv(query, key, value, mask=None):
    """Refuse queries, keys and values whose shapes cannot be attended:
    each (..., T, d_k), with query and key of one d_k and key and value of
    one T; and a mask that `check_attention_mask` refuses."""
    if not all(torch.is_tensor(x) for x in (query, key, value)):
        raise TypeError(
            "query, key and value are tensors, such as torch.randn(5, 64)"
        )
    shapes = [tuple(x.shape) for x in (query, key, value)]
    if min(map(len, shapes)) < 2:
        raise ValueError(
            f"query, key and value have shapes {shapes}; each is "
            f"(..., T, d_k), one row per token: add a token axis, x[None]"
        )
    (q, k, v) = shapes
    dtypes = [x.dtype for x in (query, key, value)]
    if not all(x.is_floating_point() for x in (query, key, value)):
        raise TypeError(
            f"query, key and value are {', '.join(map(str, dtypes))}: "
            f"attention needs floats; call .float() on each"
        )
    if len(set(dtypes)) > 1:
        raise TypeError(
            f"query, key and value are {', '.join(map(str, dtypes))}: give "
            f"all three one dtype, for example with .float() on each"
        )
    if min(q[-1], v[-1]) < 1:
        raise ValueError(
            f"query has {q[-1]} features and value {v[-1]}: a head needs "
            f"d_k of at least 1; give each head one feature or more"
        )
    if q[-1] != k[-1]:
        raise ValueError(
            f"query has d_k = {q[-1]} features, key has {k[-1]}: a query is "
            f"compared with each key by a dot product, so give both the same "
            f"last size"
        )
    if k[-2] != v[-2]:
        raise ValueError(
            f"key has {k[-2]} rows, value has {v[-2]}: each key comes with "
            f"its value, so give them the same number of tokens"
        )
    try:
        batch = torch.broadcast_shapes(q[:-2], k[:-2], v[:-2])
    except RuntimeError:
        raise ValueError(
            f"query, key and value have leading sizes {q[:-2]}, {k[:-2]} and "
            f"{v[:-2]} (batch, heads): give them the same, one key and value "
            f"head per query head (repeat a shared one h // g times)"
        ) from None
    if mask is not None:  # the scores are (..., T_q, T_k)
        check_attention_mask(mask, torch.Size((*batch, q[-2], k[-2])))


def check_padding(lengths, num_tokens):
    """Refuse a padding length outside 0 to num_tokens, naming it."""
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1 or lengths.is_floating_point():
        raise ValueError(
            f"lengths are one whole number per sequence, such as [5, 3]; "
            f"got {lengths.tolist()!r}"
        )
    wrong = [n for n in lengths.tolist() if not 0 <= n <= num_tokens]
    if wrong:
        raise ValueError(
            f"length(s) {wrong} do not fit {num_tokens} tokens: each "
            f"sequence has 0 to {num_tokens} real tokens"
        )


def check_like_loop(weights, loop_weights, out, loop_out):
    """Refuse a batched layer whose weights or outputs differ from the loop
    layer's beyond float rounding, with a ValueError that says where to
    look: the split into heads for the weights, the merge for the outputs."""
    tight = dict(rtol=1e-5, atol=1e-6)  # float rounding
    same = weights.shape == loop_weights.shape  # (B, h, T, T)
    if not (same and torch.allclose(weights, loop_weights, **tight)):
        raise ValueError(
            "the weights differ from the loop's: check how qkv is split into "
            "heads (view, permute), the scaling by sqrt(d_k), the softmax, "
            "and the rows batched_from_loop copies (every q, then every k, "
            "then every v, weights and biases)"
        )
    if not torch.allclose(out, loop_out, **tight):
        raise ValueError(
            "the weights agree but the outputs differ from the loop's: check "
            "batched_attention's weights @ V (not transposed), how the heads "
            "are put back side by side (transpose(1, 2), then reshape) and "
            "the copy of W^O (output_linear, not transposed)"
        )


def check_padding_ignored(batched, alone):
    """The largest difference between a short sequence's real tokens in a
    padded batch (`batched`, (T, d)) and the same tokens run alone; a
    ValueError naming `padding_mask` when it is more than float rounding."""
    gap = (batched - alone).abs().max().item() if batched.numel() else 0.0
    if gap >= 1e-6:  # a real token saw padding
        raise ValueError(
            f"real tokens differ by {gap:.1e} between the padded batch and "
            f"alone: check padding_mask (in sequence b, every query sees the "
            f"first lengths[b] tokens and no padding)"
        )
    return gap


def check_through_w_o(summed, output):
    """Refuse a layer's `output` (B, T, d) that is not `summed`, its heads'
    outputs each through its block of W^O, summed, plus the bias."""
    if summed.shape != output.shape:
        raise ValueError(
            f"the layer's output is {tuple(output.shape)}, its heads' outputs "
            f"through W^O {tuple(summed.shape)}: return "
            f"self.output_linear(x), the concatenated heads mixed by W^O"
        )
    if not torch.allclose(summed, output, atol=1e-4):
        gap = (summed - output).abs().max().item()
        raise ValueError(
            f"the layer's output differs from its heads' outputs through "
            f"W^O by up to {gap:.2g}: return self.output_linear(x), the "
            f"concatenated heads mixed by W^O"
        )
