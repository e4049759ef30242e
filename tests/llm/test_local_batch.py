"""The converted model cache and batched inference, on the REAL offline model.

Marked ``local_model`` (CI runs it).  One module-scoped home: the first load de-quantizes the
GGUF with transformers and writes the converted copy, the second load reads that copy (the
direct converter's copy is compared with it in test_gguf_convert.py).  The prompts are short
and written for this test.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from ragmeter.backends._local import _backend as local
from ragmeter.backends._local import _cache as local_cache
from ragmeter.backends._local import _model as local_model
from ragmeter.backends._local._backend import LocalBackend
from ragmeter.backends._local._runtimes import _TransformersRuntime
from ragmeter.backends._types import Request

pytestmark = pytest.mark.local_model

QUESTIONS = ["What is the capital of France?", "Name a colour of the sky.",
             "What is two plus two? Answer briefly."]
CLAIMS = ["The sun is hot.", "Fish can climb trees.", "Paris is in Peru."]


@pytest.fixture(scope="module")
def runtimes(tmp_path_factory):
    if local.default_model_path() is None:
        pytest.skip(f"default model not installed: {local.INSTALL_MODEL}")
    status = local.runtime_status()
    if not (status["torch"] and status["transformers"] and status["gguf"]):
        pytest.skip(f"no transformers runtime: {local.INSTALL_LOCAL}")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAGMETER_HOME", str(tmp_path_factory.mktemp("ragmeter-home")))
        location = local.resolve_model(None)
        folder = local_cache.transformers_model_dir(location.path)
        assert not folder.exists()
        # de-quantized by transformers (not the direct converter), and written on the way
        from_gguf = _TransformersRuntime(location, threads=2, direct=False)
        assert local_cache.is_complete(folder) and local_cache.converted_dir(location) == folder
        from_cache = _TransformersRuntime(location, threads=2)
        yield from_gguf, from_cache, folder


def test_cache_folder_records_its_key(runtimes):
    _, from_cache, folder = runtimes
    info = json.loads((folder / local_cache.CACHE_INFO).read_text(encoding="utf-8"))
    assert info["gguf"] == local_model.DEFAULT_GGUF and len(info["gguf_sha256"]) == 64
    assert info["format"] == local_cache.CACHE_FORMAT
    assert str(folder) in str(from_cache.model.config._name_or_path)  # loaded from the copy
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())


def test_cached_model_has_the_gguf_models_logits(runtimes):
    from_gguf, from_cache, _ = runtimes
    import torch

    msgs = [Request.chat("x", [{"role": "user", "content": QUESTIONS[0]}]).messages[0]]
    prompt = from_gguf.prompt_ids(msgs)
    assert from_cache.prompt_ids(msgs) == prompt  # same tokenizer and chat template
    ids = torch.tensor([prompt])
    with torch.inference_mode():
        a = from_gguf.model(input_ids=ids).logits
        b = from_cache.model(input_ids=ids).logits
    assert torch.equal(a, b)  # the very float32 weights, so bit-identical


def _prompts(runtime, texts):
    return [runtime.prompt_ids(Request.chat("p", [{"role": "user", "content": t}]).messages)
            for t in texts]


def test_batched_greedy_generation_equals_one_at_a_time(runtimes):
    _, runtime, _ = runtimes
    prompts = _prompts(runtime, QUESTIONS)
    params = {"max_tokens": 10}
    single = [runtime.generate(p, params) for p in prompts]
    batched = runtime.generate_batch(prompts, params)
    assert batched == single
    assert len({len(p) for p in prompts}) > 1  # the batch really was padded


def test_batched_generation_with_a_stop_string(runtimes):
    _, runtime, _ = runtimes
    prompts = _prompts(runtime, QUESTIONS)
    params = {"max_tokens": 10, "stop": [" "]}
    assert runtime.generate_batch(prompts, params) == [runtime.generate(p, params)
                                                       for p in prompts]


def test_batched_choice_scores_match_within_1e_4(runtimes):
    _, runtime, _ = runtimes
    prompts = _prompts(runtime, [f"Is this true? {c} Answer Yes or No." for c in CLAIMS])
    choices = [runtime.choice_ids(c) for c in ("Yes", "No", " maybe so")]
    single = [runtime.choice_logprobs(p, choices) for p in prompts]
    batched = runtime.choice_logprobs_batch(prompts, [choices] * len(prompts))
    for one, many in zip(single, batched, strict=True):
        assert many == pytest.approx(one, abs=1e-4)


def test_backend_gathers_concurrent_requests_into_batches(runtimes):
    _, runtime, _ = runtimes
    backend = LocalBackend(batch_size=4, batch_wait_ms=200)
    backend._runtime = runtime
    gen = [Request.chat(str(i), [{"role": "user", "content": q}], params={"max_tokens": 8})
           for i, q in enumerate(QUESTIONS)]
    yes_no = [Request.chat(c, [{"role": "user", "content": f"True? {c}"}], choices=("Yes", "No"))
              for c in CLAIMS]

    async def all_at_once():
        return await asyncio.gather(*(backend.complete(r) for r in gen + yes_no))

    responses = asyncio.run(all_at_once())
    assert backend._batcher.batch_sizes == [3, 3]
    for request, response in zip(gen + yes_no, responses, strict=True):
        alone = backend.complete_sync(request)  # one at a time, same model
        assert response.text == alone.text
        if request.choices:
            assert response.choice_probs == pytest.approx(alone.choice_probs, abs=1e-4)
        else:
            assert response.usage == alone.usage
