"""The memo of the reader-edit kernel (tests/harness/memo.py)."""

import types

import pytest
import torch

import memo


def counting_module():
    calls = []

    def results(model, sentences, repeats=3):
        calls.append(sentences)
        return {"sum": sum(p.sum().item() for p in model.parameters())}

    return types.SimpleNamespace(results=results), calls


def test_the_same_input_is_computed_once_and_each_caller_gets_a_copy():
    module, calls = counting_module()
    memo.memoize(module, "results")
    model, twin = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    twin.load_state_dict(model.state_dict())  # the same weights
    first = module.results(model, ["a b"], repeats=3)
    first["sum"] = "changed by the caller"
    again = module.results(twin, ["a b"], repeats=3)
    assert len(calls) == 1 and again["sum"] != "changed by the caller"


def test_another_input_is_computed_again():
    module, calls = counting_module()
    memo.memoize(module, "results")
    model = torch.nn.Linear(3, 2)
    module.results(model, ["a b"])
    module.results(model, ["a c"])  # another sentence
    module.results(model, ["a b"], repeats=4)  # another argument
    with torch.no_grad():
        model.weight[0, 0] += 1  # other weights
    module.results(model, ["a b"])
    assert len(calls) == 4


def test_an_argument_without_a_fingerprint_calls_through():
    module, calls = counting_module()
    memo.memoize(module, "results")
    model = torch.nn.Linear(3, 2)
    module.results(model, object())
    module.results(model, object())
    assert len(calls) == 2
    with pytest.raises(memo.NoFingerprint):
        memo.fingerprint(object())


def test_a_call_that_raises_is_not_stored():
    calls = []

    def results(n):
        calls.append(n)
        if n < 0:
            raise ValueError("use n >= 0")
        return n

    module = types.SimpleNamespace(results=results)
    store = memo.memoize(module, "results")
    for _ in range(2):
        with pytest.raises(ValueError, match="use n"):
            module.results(-1)
    assert len(calls) == 2 and not store
