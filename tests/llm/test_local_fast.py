"""The transformers-free runtime (:mod:`ragmeter.llm.local_fast`) against the transformers
runtime, on the REAL offline model.

Marked ``local_model`` (CI runs it).  One module-scoped home: the GGUF is converted once on the
transformers runtime's (the reference's) first load (by the direct converter, whose folder
equals transformers' conversion byte for byte: test_gguf_convert.py), then both runtimes read
the converted folder.  The
prompts are short and written for this test.  What must hold: the same prompt token ids and
decoded texts, bit-identical logits, the same greedy generations one at a time and in padded
batches, choice log-probabilities within 1e-4, and sampling handed to transformers.
"""

from __future__ import annotations

import pytest

from ragmeter.llm import local, local_cache
from ragmeter.llm.base import Request
from ragmeter.llm.local_fast import FastLlamaRuntime, supports
from ragmeter.llm.local_runtimes import _TransformersRuntime

pytestmark = pytest.mark.local_model

CHATS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "Name a colour of the sky."}],
    [{"role": "user", "content": "What is two plus two? Answer briefly."}],
    [{"role": "user", "content": "Écris une phrase sur les chats 🐱, s'il te plaît."}],
    [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"},
     {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}],
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    if local.default_model_path() is None:
        pytest.skip(f"default model not installed: {local.INSTALL_MODEL}")
    status = local.runtime_status()
    if not (status["torch"] and status["transformers"] and status["gguf"]):
        pytest.skip(f"no transformers runtime: {local.INSTALL_LOCAL}")
    home = tmp_path_factory.mktemp("ragmeter-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGMETER_HOME", str(home))
        location = local.resolve_model(None)
        folder = local_cache.converted_dir(location)
        assert folder is not None
        reference = _TransformersRuntime(location, threads=2)  # converts on the way
        assert local_cache.is_complete(folder) and supports(folder)
        # the fallback is a second transformers runtime, read from the converted folder
        fast = FastLlamaRuntime(folder, 2, lambda: _TransformersRuntime(location, threads=2))
        yield reference, fast, [reference.prompt_ids(_messages(c)) for c in CHATS], home


def _messages(chat):
    return Request.chat("p", chat).messages


def test_same_prompt_ids_and_decoding(pair):
    reference, fast, prompts, _ = pair
    assert [fast.prompt_ids(_messages(c)) for c in CHATS] == prompts
    assert fast.choice_ids(" maybe so") == reference.choice_ids(" maybe so")
    for ids in [*prompts, [1, 2, 3, 100, 2000, 30000, 49151]]:
        for skip in (True, False):
            assert (fast.tokenizer.decode(ids, skip_special_tokens=skip)
                    == reference.tokenizer.decode(ids, skip_special_tokens=skip))
    assert (fast.pad_id, fast.eos, fast.max_context) == (reference.pad_id, reference.eos,
                                                          reference.max_context)


def test_logits_are_bit_identical(pair):
    import torch

    reference, fast, prompts, _ = pair
    for prompt in prompts:
        ids = torch.tensor([prompt])
        with torch.inference_mode():
            expected = reference.model(input_ids=ids).logits
            got = fast.model.forward(ids, torch.arange(len(prompt))[None], None, [])
        assert torch.equal(got, expected)


def test_greedy_generation_is_identical_alone_and_batched(pair):
    reference, fast, prompts, _ = pair
    params = {"max_tokens": 16, "temperature": 0}
    assert [fast.generate(p, params) for p in prompts] == [reference.generate(p, params)
                                                           for p in prompts]
    assert len({len(p) for p in prompts}) > 1  # the batch below is padded
    assert fast.generate_batch(prompts, params) == reference.generate_batch(prompts, params)


def test_choice_logprobs_within_1e_4(pair):
    reference, fast, prompts, _ = pair
    choices = [fast.choice_ids(c) for c in ("Yes", "No", " maybe so")]
    assert len(choices[2]) > 1  # one multi-token choice
    for prompt in prompts:
        assert fast.choice_logprobs(prompt, choices) == pytest.approx(
            reference.choice_logprobs(prompt, choices), abs=1e-4)
    batched = fast.choice_logprobs_batch(prompts, [choices] * len(prompts))
    expected = reference.choice_logprobs_batch(prompts, [choices] * len(prompts))
    for got, want in zip(batched, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-4)


def test_sampling_and_stop_strings_go_to_transformers(pair):
    reference, fast, prompts, _ = pair
    assert fast._fallback is None
    sampled = {"max_tokens": 8, "temperature": 0.7, "seed": 3}
    assert fast.generate(prompts[0], sampled) == reference.generate(prompts[0], sampled)
    stopped = {"max_tokens": 8, "stop": [" "]}
    assert fast.generate_batch(prompts[:2], stopped) == reference.generate_batch(prompts[:2],
                                                                                 stopped)
    assert isinstance(fast._fallback, _TransformersRuntime) and fast._fallback is not reference


def test_backend_loads_the_fast_runtime_from_a_converted_folder(pair, monkeypatch):
    monkeypatch.setenv("RAGMETER_HOME", str(pair[3]))
    backend = local.LocalBackend()
    backend.load()
    assert isinstance(backend._runtime, FastLlamaRuntime)
    monkeypatch.setenv("RAGMETER_LOCAL_FAST", "0")
    old = local.LocalBackend()
    old.load()
    assert isinstance(old._runtime, _TransformersRuntime)
