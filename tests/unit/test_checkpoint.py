"""Every branch of the checkpoint loader, offline, with a tiny random BERT."""

import time

import huggingface_hub
import pytest
from huggingface_hub import constants as hub_constants

from mhabook.experiments import checkpoint
from mhabook.experiments.checkpoint import PREFERRED, load_checkpoint, resolve
from tiny import tiny_bert, tiny_tokenizer


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A tiny random BERT and its tokenizer, saved to a folder."""
    folder = tmp_path_factory.mktemp("tiny-bert")
    tiny_tokenizer().save_pretrained(folder)
    # saved with a fast kernel: the loader must still load it eager
    tiny_bert(
        attn_implementation="sdpa", max_position_embeddings=64
    ).save_pretrained(folder)
    return folder


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An empty Hugging Face cache in a temporary folder."""
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path))
    return tmp_path


def put_in_cache(cache, name, folder):
    repo = cache / f"models--{name.replace('/', '--')}"
    snapshot = repo / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    for file in folder.iterdir():
        (snapshot / file.name).write_bytes(file.read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)


def test_a_local_folder_is_loaded_with_eager_attention(tiny_model):
    tokenizer, model, info = load_checkpoint(str(tiny_model))
    assert info.source == "local folder"
    assert (info.num_layers, info.num_heads, info.hidden_size) == (2, 2, 8)
    assert model.config._attn_implementation == "eager"
    assert not model.training
    ids = tokenizer("time flies", return_tensors="pt")
    assert ids["input_ids"].tolist() == [[2, 5, 6, 3]]
    assert len(model(**ids, output_attentions=True).attentions) == 2
    assert huggingface_hub.utils.are_progress_bars_disabled()


def test_positions_other_than_absolute_are_noted(tmp_path, capsys):
    tiny_tokenizer().save_pretrained(tmp_path)
    tiny_bert(
        position_embedding_type="relative_key", max_position_embeddings=64
    ).save_pretrained(tmp_path)
    load_checkpoint(str(tmp_path))
    assert "'relative_key' positions ignored" in capsys.readouterr().out


def test_the_environment_variable_names_the_checkpoint(
    tiny_model, monkeypatch
):
    monkeypatch.setenv(checkpoint.ENV_VAR, str(tiny_model))
    assert resolve()[0] == str(tiny_model)
    monkeypatch.setenv(checkpoint.ENV_VAR, f" {tiny_model} ")  # a stray space
    assert resolve()[0] == str(tiny_model)
    monkeypatch.setenv(checkpoint.ENV_VAR, str(tiny_model))
    _, _, info = load_checkpoint()
    assert info.name == tiny_model.name and not info.is_bundled


def test_bert_base_is_preferred_when_cached(tiny_model, hub_cache):
    put_in_cache(hub_cache, PREFERRED, tiny_model)
    _, _, info = load_checkpoint()
    assert info.name == PREFERRED
    assert info.source == "Hugging Face cache"
    assert not info.is_bundled


def test_bert_base_is_preferred_when_the_hub_answers(hub_cache, monkeypatch):
    monkeypatch.setattr(checkpoint, "hub_reachable", lambda: True)
    assert resolve() == (PREFERRED, PREFERRED, "Hugging Face hub")


def test_offline_falls_back_to_the_bundled_bert(hub_cache, capsys):
    start = time.perf_counter()
    resolve()  # where a hub that does not answer could make it wait
    assert time.perf_counter() - start < 30
    _, model, info = load_checkpoint()
    assert capsys.readouterr().out == ""  # the library prints nothing
    assert info.name == checkpoint.BUNDLED and info.is_bundled
    assert (info.num_layers, info.num_heads, info.hidden_size) == (6, 12, 384)
    assert PREFERRED in info.loaded() and "Loaded" in info.loaded()


def test_a_model_that_is_not_bert_is_refused_with_the_fix(
    tmp_path, monkeypatch
):
    from transformers import GPT2Config, LlamaConfig

    for config in (GPT2Config(n_layer=1), LlamaConfig(num_hidden_layers=1)):
        folder = tmp_path / config.model_type
        config.save_pretrained(folder)
        monkeypatch.setenv("MHA_CHECKPOINT", str(folder))  # set by a reader
        with pytest.raises(ValueError, match="not a BERT encoder.*Set MHA"):
            load_checkpoint()
        monkeypatch.delenv("MHA_CHECKPOINT")
        with pytest.raises(ValueError, match="BERT encoder.*Pass a BERT.*no"):
            load_checkpoint(str(folder))  # passed by name


def test_a_bert_saved_as_a_decoder_is_refused_with_the_fix(tmp_path):
    from transformers import BertConfig

    BertConfig(num_hidden_layers=1, is_decoder=True).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="is_decoder=True.*is_decoder = Fal"):
        load_checkpoint(str(tmp_path))


def test_a_model_with_fewer_embeddings_than_its_tokenizer_is_refused(
    tmp_path,
):
    from tiny import save_random_bert

    save_random_bert(tmp_path, layers=1, heads=2, hidden=8, vocab_size=100)
    with pytest.raises(ValueError, match="tokens but its model embeds 100"):
        load_checkpoint(str(tmp_path))


@pytest.mark.parametrize(
    "key, value, message",
    [  # a reader's edit of config.json beside weights saved for 1 layer
        ("num_hidden_layers", 2, "encoder.layer.1.*set config.json"),
        ("intermediate_size", 40, "sizes its config.json gives"),
        ("num_attention_heads", 3, "its config.json cannot build"),  # 8 / 3
    ],
)
def test_a_config_the_weights_do_not_fit_names_config_json(
    tmp_path, key, value, message
):
    import json

    from tiny import save_random_bert

    save_random_bert(tmp_path, layers=1, heads=2, hidden=8)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config[key] != value  # the edit changes the config
    config[key] = value
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=message):
        load_checkpoint(str(tmp_path))


def test_a_tokenizer_that_keeps_capitals_over_a_lowercase_vocabulary(
    tmp_path,
):
    from transformers import AutoTokenizer

    from tiny import save_random_bert

    save_random_bert(tmp_path, layers=1, heads=2, hidden=8)
    cased = AutoTokenizer.from_pretrained(tmp_path, do_lower_case=False)
    assert cased.tokenize("The") == [cased.unk_token]  # as a reader saw it
    cased.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="keeps capitals.*do_lower_case"):
        load_checkpoint(str(tmp_path))


def test_a_folder_without_a_tokenizer_is_refused_with_the_fix(tmp_path):
    tiny_bert().save_pretrained(tmp_path)
    with pytest.raises(OSError, match="no tokenizer.*save_pretrained"):
        load_checkpoint(str(tmp_path))


def test_an_unknown_name_offline_says_what_was_tried(hub_cache):
    with pytest.raises(OSError, match="Tried: a local folder.*offline"):
        resolve("no-such/checkpoint")


def test_the_bundled_models_printed_name_loads_it_offline(hub_cache):
    """$MHA_CHECKPOINT set to the name the pages print for the bundled
    model, offline and not in the cache: the bundled folder."""
    path, display, _ = resolve(checkpoint.BUNDLED)
    assert (path, display) == (checkpoint.bundled_path(), checkpoint.BUNDLED)


def test_the_hub_is_not_contacted_when_offline(monkeypatch):
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)

    def refuse(*args, **kwargs):
        raise AssertionError("contacted the hub while offline")

    monkeypatch.setattr(checkpoint.socket, "create_connection", refuse)
    assert checkpoint.hub_reachable() is False


def test_an_unreachable_hub_is_decided_by_one_short_try(monkeypatch):
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    calls = []

    def unreachable(address, timeout):
        calls.append(timeout)
        raise OSError("no route")

    monkeypatch.setattr(checkpoint.socket, "create_connection", unreachable)
    assert checkpoint.hub_reachable() is False
    assert calls == [2.0]


# MHA_CHECKPOINT as a reader types it (issue 32)


def test_a_relative_folder_is_found_from_where_the_command_ran(
    tiny_model, tmp_path, monkeypatch
):
    """`make book` runs kernels in book/: a path relative to the shell's
    folder ($PWD) still finds the checkpoint, as an absolute path."""
    elsewhere = tmp_path / "book"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("PWD", str(tiny_model.parent))
    monkeypatch.setenv(checkpoint.ENV_VAR, tiny_model.name)
    path, display, source = resolve()
    assert path == str(tiny_model) and display == tiny_model.name
    assert source == "local folder"


def test_the_bundled_folder_named_as_a_folder_keeps_its_name(monkeypatch):
    """$MHA_CHECKPOINT set to the bundled model's own folder: the pages
    still name it all-MiniLM-L6-v2, not the folder's last part."""
    folder = checkpoint.bundled_path()
    monkeypatch.setenv(checkpoint.ENV_VAR, str(folder))
    path, display, source = resolve()
    assert (path, display) == (str(folder), checkpoint.BUNDLED)
    assert source.startswith("bundled")


def test_a_folder_under_home_or_the_repository_is_found(
    tiny_model, monkeypatch
):
    monkeypatch.setenv("HOME", str(tiny_model.parent))
    assert resolve(f"~/{tiny_model.name}")[0] == str(tiny_model)
    monkeypatch.setattr(checkpoint, "ROOT", tiny_model.parent)
    monkeypatch.setenv("PWD", "/")
    assert resolve(tiny_model.name)[0] == str(tiny_model)


def test_a_folder_that_is_not_there_says_where_it_looked(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OSError, match="folder 'path/to/bert' not found") as e:
        resolve("path/to/bert")
    assert str(tmp_path / "path" / "to" / "bert") in str(e.value)
    assert "Repo id" not in str(e.value)
    monkeypatch.setenv("MHA_CHECKPOINT", "./bert")  # set by the reader
    with pytest.raises(OSError, match="Set MHA_CHECKPOINT to the folder"):
        resolve()


def test_a_file_or_a_folder_without_config_or_weights_is_explained(
    tiny_model, tmp_path
):
    weights = next(tiny_model.glob("*.safetensors"))
    with pytest.raises(OSError, match="is a file.*the folder that holds"):
        resolve(str(weights))
    with pytest.raises(OSError, match="has no config.json.*save_pretrained"):
        load_checkpoint(str(tmp_path))
    (tmp_path / "config.json").write_bytes(
        (tiny_model / "config.json").read_bytes()
    )
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json"):
        if (tiny_model / name).exists():
            (tmp_path / name).write_bytes((tiny_model / name).read_bytes())
    with pytest.raises(OSError, match="no weights.*save_pretrained"):
        load_checkpoint(str(tmp_path))


def test_a_missing_folder_passed_by_name_does_not_mention_the_variable(
    monkeypatch, tmp_path
):
    from mhabook.experiments import checkpoint

    monkeypatch.delenv(checkpoint.ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OSError) as passed:
        checkpoint.resolve("./no-such-folder")
    assert "Pass the folder" in str(passed.value)
    assert "call it with no name" in str(passed.value)
    assert checkpoint.ENV_VAR not in str(passed.value)
    monkeypatch.setenv(checkpoint.ENV_VAR, "./no-such-folder")
    with pytest.raises(OSError, match=f"unset {checkpoint.ENV_VAR}"):
        checkpoint.resolve()


def test_a_one_segment_checkpoint_reads_pairs_in_that_segment(
    tmp_path, capsys
):
    tiny_tokenizer().save_pretrained(tmp_path)
    tiny_bert(type_vocab_size=1, max_position_embeddings=64).save_pretrained(
        tmp_path
    )
    tokenizer, model, _ = load_checkpoint(str(tmp_path))
    assert "has one segment; B shares it" in capsys.readouterr().out
    pair = tokenizer("time flies", "fruit flies", return_tensors="pt")
    assert pair["token_type_ids"].max() == 1  # B is segment 1
    together = model(**pair).last_hidden_state
    as_one = dict(pair, token_type_ids=pair["token_type_ids"] * 0)
    assert together.allclose(model(**as_one).last_hidden_state)


def test_a_checkpoint_with_too_few_positions_names_them(tmp_path):
    tiny_tokenizer().save_pretrained(tmp_path)
    tiny_bert().save_pretrained(tmp_path)  # 16 positions
    with pytest.raises(ValueError, match="reads at most 16 tokens.*64"):
        load_checkpoint(str(tmp_path))
