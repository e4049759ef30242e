"""The transformers-free runtimes (:mod:`ragmeter.backends._local._fast`, torch, and
:mod:`ragmeter.backends._local._numpy`, numpy) against the transformers runtime, on the REAL offline
model.

Marked ``local_model`` (CI runs it).  One module-scoped home: the GGUF is converted once on the
transformers runtime's (the reference's) first load (by the direct converter, whose folder
equals transformers' conversion byte for byte: test_gguf_convert.py), then both runtimes read
the converted folder.  The
prompts are short and written for this test.  What must hold: the same prompt token ids and
decoded texts, bit-identical logits, the same greedy generations one at a time and in padded
batches, choice log-probabilities within 1e-4, and sampling handed to transformers.  The numpy
runtime (another BLAS: logits equal to float32 noise, not bit for bit) gives the torch runtime's
greedy texts alone and in a left-padded batch of 8, batched equal to one at a time, choice
log-probabilities within 1e-4; a greedy call through the backend never imports torch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ragmeter.backends._local import _backend as local
from ragmeter.backends._local import _cache as local_cache
from ragmeter.backends._local import _model as local_model
from ragmeter.backends._local._fast import FastLlamaRuntime, supports
from ragmeter.backends._local._numpy import NumpyLlamaRuntime
from ragmeter.backends._local._runtimes import _TransformersRuntime
from ragmeter.backends._types import Request

pytestmark = pytest.mark.local_model

CHATS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "Name a colour of the sky."}],
    [{"role": "user", "content": "What is two plus two? Answer briefly."}],
    [{"role": "user", "content": "Écris une phrase sur les chats 🐱, s'il te plaît."}],
    [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"},
     {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}],
]
# three more for a batch of 8 (numpy against torch), of other lengths and kinds
MORE = [
    [{"role": "user", "content": "Context: The Amazon river flows through Brazil, Peru and "
                                 "Colombia. It is about 6,400 km long.\nQuestion: Which "
                                 "countries does the Amazon flow through?"}],
    [{"role": "user", "content": "Write a haiku about rain."}],
    [{"role": "user", "content": "List three prime numbers, separated by commas."}],
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


@pytest.fixture(scope="module")
def numpy_pair(pair):
    """(torch runtime, numpy runtime, 8 prompt id lists) over the same converted folder."""
    _, fast, prompts, _ = pair
    runtime = NumpyLlamaRuntime(fast.folder, 2, fast.fallback)
    return fast, runtime, prompts + [fast.prompt_ids(_messages(c)) for c in MORE]


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
    _assert_choices_close(fast, reference, prompts, prompts, choices)


def _assert_choices_close(runtime, reference, prompts, alone, choices):
    """Choice log-probabilities of ``runtime`` within 1e-4 of ``reference``'s: the prompts
    in ``alone`` one at a time, then all ``prompts`` in one batch."""
    for prompt in alone:
        assert runtime.choice_logprobs(prompt, choices) == pytest.approx(
            reference.choice_logprobs(prompt, choices), abs=1e-4)
    batched = runtime.choice_logprobs_batch(prompts, [choices] * len(prompts))
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


def test_numpy_logits_are_torch_logits_to_float32_noise(numpy_pair):
    import numpy as np
    import torch

    fast, runtime, prompts = numpy_pair
    worst = 0.0
    for prompt in prompts:
        with torch.inference_mode():
            want = fast.model.forward(torch.tensor([prompt]), torch.arange(len(prompt))[None],
                                      None, []).numpy()[0]
        with runtime.model.blas.single():
            got = runtime.model.prefill([prompt], None, [(0, len(prompt))])[0]
        worst = max(worst, float(np.abs(got - want).max()))
        assert int(got[-1].argmax()) == int(want[-1].argmax())
    # measured 1.2e-4 on logits up to ~38: both are that far from a float64 pass
    assert worst < 5e-4


def test_numpy_greedy_equals_torch_alone_and_in_a_batch_of_8(numpy_pair):
    fast, runtime, prompts = numpy_pair
    params = {"max_tokens": 16, "temperature": 0}
    assert len(prompts) == 8 and len({len(p) for p in prompts}) > 1  # left padding
    batched = runtime.generate_batch(prompts, params)
    assert batched == fast.generate_batch(prompts, params)  # torch: alone = batched (above)
    assert batched == [runtime.generate(p, params) for p in prompts]  # numpy: the same


def test_numpy_choice_logprobs_within_1e_4_of_torch(numpy_pair):
    fast, runtime, prompts = numpy_pair
    choices = [runtime.choice_ids(c) for c in ("Yes", "No", " maybe so")]
    assert len(choices[2]) > 1
    _assert_choices_close(runtime, fast, prompts, prompts[:3], choices)


def test_numpy_samples_without_transformers(numpy_pair):
    """Sampling runs on the numpy runtime itself (issue 26.1; it went to transformers, whose
    torch draws it does not repeat): seeded, and top_k=1 is greedy decoding."""
    _, runtime, prompts = numpy_pair
    sampled = {"max_tokens": 8, "temperature": 0.7, "seed": 3}
    first = runtime.generate(prompts[0], sampled)
    assert first == runtime.generate(prompts[0], sampled) and first.completion_tokens > 0
    assert runtime._fallback is None  # transformers never loaded
    assert (runtime.generate(prompts[0], dict(sampled, top_k=1))
            == runtime.generate(prompts[0], {"max_tokens": 8}))


def test_backend_default_is_numpy_and_never_imports_torch(pair, monkeypatch):
    """A greedy call and a choice call through the backend, in a fresh process: the numpy
    runtime, and neither torch nor transformers imported."""
    code = (
        "import json, sys\n"
        "from ragmeter.backends._local._backend import LocalBackend\n"
        "from ragmeter.backends._types import Request\n"
        "b = LocalBackend()\n"
        "g = b.complete_sync(Request.chat('g', [{'role': 'user', 'content': 'Hi'}],\n"
        "                                 params={'max_tokens': 4, 'temperature': 0}))\n"
        "c = b.complete_sync(Request.chat('c', [{'role': 'user', 'content': 'Yes?'}],\n"
        "                                 choices=('Yes', 'No')))\n"
        "print(json.dumps({'runtime': type(b._runtime).__name__, 'text': g.text,\n"
        "                  'probs': sum(c.choice_probs.values()),\n"
        "                  'heavy': sorted(m for m in ('torch', 'transformers')\n"
        "                                  if m in sys.modules)}))\n")
    env = dict(os.environ, RAGMETER_HOME=str(pair[3]))
    env.pop("RAGMETER_LOCAL_FORWARD", None)
    env.pop("RAGMETER_LOCAL_FAST", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["runtime"] == "NumpyLlamaRuntime" and got["heavy"] == []
    assert got["text"] and got["probs"] == pytest.approx(1.0)


def test_backend_picks_the_forward_pass(pair, monkeypatch):
    """numpy by default; ``forward=`` or ``$RAGMETER_LOCAL_FORWARD`` pick torch;
    ``RAGMETER_LOCAL_FAST=0`` picks transformers; the identity (the cache key, the run
    records) names the runtime that runs (issue 26.1: it said transformers for all three)."""
    monkeypatch.setenv("RAGMETER_HOME", str(pair[3]))
    for name in ("RAGMETER_LOCAL_FORWARD", "RAGMETER_LOCAL_FAST"):
        monkeypatch.delenv(name, raising=False)
    expected = {None: NumpyLlamaRuntime, "torch": FastLlamaRuntime, "numpy": NumpyLlamaRuntime}
    for forward, kind in expected.items():
        backend = local.LocalBackend(forward=forward)
        backend.load()
        assert isinstance(backend._runtime, kind)
    assert local.LocalBackend(forward="torch").identity()["runtime"] == "torch"
    assert local.LocalBackend().identity()["runtime"] == "numpy"
    monkeypatch.setenv("RAGMETER_LOCAL_FORWARD", "torch")
    from_env = local.LocalBackend()
    from_env.load()
    assert isinstance(from_env._runtime, FastLlamaRuntime)
    monkeypatch.delenv("RAGMETER_LOCAL_FORWARD")
    monkeypatch.setenv("RAGMETER_LOCAL_FAST", "0")
    old = local.LocalBackend()
    old.load()
    assert isinstance(old._runtime, _TransformersRuntime)
    assert old.identity()["runtime"] == "transformers"
    with pytest.raises(local.ConfigError, match="unknown forward 'jax'"):
        local.LocalBackend(forward="jax")


def test_dry_run_counter_needs_neither_transformers_nor_torch(pair, tmp_path):
    """``token_counter("local")`` on a model never converted: it converts directly and counts
    from ``tokenizer.json`` and the chat template, in a fresh process without importing
    transformers or torch, and every count equals the transformers tokenizer's on the same
    texts and chats (the reference runtime of the ``pair`` fixture)."""
    reference = pair[0]
    code = (
        "import json, sys\n"
        "from ragmeter.backends._tokens import token_counter\n"
        f"chats = {CHATS + MORE!r}\n"
        "c = token_counter('local', None)\n"
        "print(json.dumps({'method': c.method, 'exact': c.exact,\n"
        "                  'texts': [c.count(m['content']) for ch in chats for m in ch],\n"
        "                  'chats': [c.count_messages(ch) for ch in chats],\n"
        "                  'heavy': sorted(m for m in ('torch', 'transformers')\n"
        "                                  if m in sys.modules)}))\n")
    env = dict(os.environ, RAGMETER_HOME=str(tmp_path / "empty-home"))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["heavy"] == [] and got["exact"]
    assert got["method"] == f"local:{local_model.DEFAULT_MODEL}"
    tok = reference.tokenizer
    assert got["texts"] == [len(tok.encode(m["content"], add_special_tokens=False))
                            for ch in CHATS + MORE for m in ch]
    assert got["chats"] == [len(reference.prompt_ids(_messages(ch))) for ch in CHATS + MORE]


def test_numpy_shared_prefix_changes_no_answer(pair, numpy_pair):
    """A batch that shares a long system prompt (the demo's shape: the prompt's ~55% is its
    system prompt) computes that prefix once: the greedy answers equal those without sharing
    and the torch pass's, batched and one at a time (the kept prefix serves a lone prompt)."""
    fast, runtime, _ = numpy_pair
    system = ("You answer questions from the documents you are given. The documents may be "
              "incomplete or contain mistakes. When they hold the answer, give it in a few "
              "words; when they do not, say that you cannot answer from these documents.")
    facts = [("The Amazon is about 6,400 km long.", "How long is the Amazon?"),
             ("Canberra is the capital of Australia.", "What is the capital of Australia?"),
             ("Water freezes at 0 degrees Celsius.", "At what temperature does water freeze?"),
             ("The violin has four strings.", "How many strings has a violin?")]
    prompts = [fast.prompt_ids(_messages([{"role": "system", "content": system},
                                          {"role": "user",
                                           "content": f"Documents:\n{d}\n\nQuestion: {q}"}]))
               for d, q in facts]
    params = {"max_tokens": 12, "temperature": 0}
    runtime._prefixes.clear()
    runtime.share_prefix = True
    shared = runtime.generate_batch(prompts, params)
    assert len(runtime._prefixes) == 1
    assert len(next(iter(runtime._prefixes))) >= runtime.MIN_PREFIX
    alone = [runtime.generate(p, params) for p in prompts]  # each reuses the kept prefix
    runtime.share_prefix = False
    try:
        plain = runtime.generate_batch(prompts, params)
    finally:
        runtime.share_prefix = True
    assert shared == plain == alone == fast.generate_batch(prompts, params)
