"""The numpy runtime on its own (issue 26.1): chosen without torch, named by the backend's
identity, and complete: greedy decoding, sampling, repetition penalties and stop strings
without a fallback to transformers.  A tiny random Llama GGUF (``write_tiny``) converted by the
direct converter; no real model, seconds."""

from __future__ import annotations

import math

import pytest

from ragmeter.backends._local import _backend as local
from ragmeter.backends._local import _numpy as local_numpy
from ragmeter.backends._local._model import resolve_model
from ragmeter.backends._types import Request
from ragmeter.errors import ConfigError, MissingDependencyError

np = pytest.importorskip("numpy")
pytest.importorskip("gguf")
pytest.importorskip("tokenizers")
pytest.importorskip("jinja2")
pytest.importorskip("threadpoolctl")

from tests.llm.test_gguf_convert_units import write_tiny  # noqa: E402

NUMPY_ONLY = {"numpy": True, "gguf": True, "tokenizers": True, "jinja2": True,
              "threadpoolctl": True, "torch": False, "transformers": False,
              "accelerate": False, "llama_cpp": False}


@pytest.fixture
def tiny_gguf(tmp_path):
    return write_tiny(tmp_path / "tiny.gguf")


@pytest.fixture
def numpy_only(monkeypatch):
    monkeypatch.setattr(local, "runtime_status", lambda: dict(NUMPY_ONLY))


def _chat(text: str, **params) -> Request:
    return Request.chat("r", [{"role": "user", "content": text}], params=params)


# ----------------------------------------------------------------------------- the choice

def test_auto_runs_a_llama_gguf_on_numpy_without_torch(tiny_gguf, numpy_only):
    backend = local.LocalBackend(model=str(tiny_gguf))
    assert backend.runtime_name == "numpy" and backend.identity()["runtime"] == "numpy"
    backend.load()
    assert isinstance(backend._runtime, local_numpy.NumpyLlamaRuntime)


def test_load_in_background_loads_once_on_the_model_thread(tiny_gguf, numpy_only, monkeypatch):
    built: list[int] = []
    real = local._build_runtime

    def counted(*args):
        import threading

        built.append(threading.get_ident())
        return real(*args)

    monkeypatch.setattr(local, "_build_runtime", counted)
    backend = local.LocalBackend(model=str(tiny_gguf), max_tokens=4)
    pending = backend.load_in_background()
    answer = backend.complete_sync(_chat("hello"))  # queues behind the load
    assert pending.done() and pending.exception() is None
    assert isinstance(backend._runtime, local_numpy.NumpyLlamaRuntime)
    assert built == [backend._model_thread_id] and isinstance(answer.text, str)


def test_a_failed_background_load_is_raised_by_the_first_call(tiny_gguf, numpy_only,
                                                               monkeypatch):
    def broken(*args):
        raise ConfigError("local: broken on purpose")

    monkeypatch.setattr(local, "_build_runtime", broken)
    backend = local.LocalBackend(model=str(tiny_gguf), max_tokens=4)
    assert isinstance(backend.load_in_background().exception(timeout=30), ConfigError)
    with pytest.raises(ConfigError, match="broken on purpose"):
        backend.load()


def test_what_numpy_does_not_run_asks_for_the_torch_extra(tmp_path, numpy_only):
    qwen = write_tiny(tmp_path / "qwen.gguf", arch="qwen2")
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragmeter\[torch\]'") as err:
        local.LocalBackend(model=str(qwen))
    assert "architecture 'qwen2'" in str(err.value)
    with pytest.raises(ConfigError, match="numpy runtime does not run qwen.*runtime='transformers'"):
        local.LocalBackend(model=str(qwen), runtime="numpy")


def test_explicit_runtimes_and_their_extras(tiny_gguf, tmp_path, monkeypatch):
    status = dict(NUMPY_ONLY, torch=True, transformers=True)
    monkeypatch.setattr(local, "runtime_status", lambda: status)
    loc = resolve_model(str(tiny_gguf))
    assert local._choose_runtime("auto", loc) == "numpy"
    assert local._choose_runtime("torch", loc) == "torch"
    assert local._choose_runtime("auto", loc, forward="torch") == "torch"
    assert local._choose_runtime("transformers", loc) == "transformers"
    qwen = resolve_model(str(write_tiny(tmp_path / "q.gguf", arch="qwen2")))
    assert local._choose_runtime("auto", qwen) == "transformers"
    assert local._choose_runtime("torch", qwen) == "transformers"  # the torch pass runs Llama
    with pytest.raises(ConfigError, match="disagree"):
        local._choose_runtime("numpy", loc, forward="torch")
    status.update(torch=False, transformers=False)
    with pytest.raises(MissingDependencyError, match=r"ragmeter\[torch\]"):
        local._choose_runtime("torch", loc)
    status.update(tokenizers=False)
    with pytest.raises(MissingDependencyError, match=r"ragmeter\[local\].*\(tokenizers\)|"
                                                      r"\(tokenizers\).*ragmeter\[local\]"):
        local._choose_runtime("numpy", loc)


# ----------------------------------------------------------------------------- generation

@pytest.fixture
def backend(tiny_gguf, numpy_only):
    made = local.LocalBackend(model=str(tiny_gguf), max_tokens=12)
    made.load()
    return made


def test_sampling_is_seeded_and_does_not_depend_on_the_batch(backend):
    runtime = backend._runtime
    prompts = [runtime.prompt_ids(_chat(t).messages) for t in ("hello", "world order", "x")]
    params = {"temperature": 1.3, "seed": 7, "max_tokens": 10}
    alone = [runtime.generate_batch([p], params)[0] for p in prompts]
    assert runtime.generate_batch(prompts, params) == alone
    assert [runtime.generate_batch([p], params)[0] for p in prompts] == alone
    other = [runtime.generate_batch([p], dict(params, seed=8))[0] for p in prompts]
    assert other != alone  # another seed, other draws (random weights: near-flat logits)
    # top_k=1 keeps the argmax only: sampling then is greedy decoding
    top1 = [runtime.generate_batch([p], dict(params, top_k=1))[0] for p in prompts]
    assert top1 == [runtime.generate_batch([p], {"max_tokens": 10})[0] for p in prompts]


def test_stop_strings_end_the_text_before_them(backend):
    runtime = backend._runtime
    prompt = runtime.prompt_ids(_chat("hello world").messages)
    full = runtime.generate_batch([prompt], {"max_tokens": 12})[0]
    assert len(full.text) > 3, "the tiny model should say something"
    stop = full.text[2:4]
    cut = runtime.generate_batch([prompt], {"max_tokens": 12, "stop": [stop]})[0]
    assert cut.text == full.text[:full.text.find(stop)]
    assert cut.finish_reason == "stop" and cut.completion_tokens <= full.completion_tokens
    # in a batch, each row ends at its own stop and the others run on
    other = runtime.prompt_ids(_chat("x").messages)
    both = runtime.generate_batch([prompt, other], {"max_tokens": 12, "stop": [stop]})
    assert both[0] == cut
    assert both[1] == runtime.generate_batch([other], {"max_tokens": 12, "stop": [stop]})[0]


def test_the_backend_answers_sampled_requests_without_torch(backend):
    response = backend.complete_sync(_chat("hello", temperature=0.7, seed=1, max_tokens=5,
                                           repetition_penalty=1.2))
    assert response.usage.completion_tokens >= 1
    assert "torch" not in backend.identity()["runtime"]


# ----------------------------------------------------------------------------- the chooser

def _pick(params, logits, prompts=((),), times=1):
    chooser = local_numpy._Chooser(np, params, [list(p) for p in prompts], len(logits[0]))
    return [chooser.pick(np.array(logits, dtype=np.float32)).tolist() for _ in range(times)]


def test_repetition_penalty_divides_positive_and_multiplies_negative_logits():
    # token 0 (3.0) was seen: 3 / 2 = 1.5 < 2.0, so token 2 wins; unpenalized, token 0
    assert _pick({"repetition_penalty": 2.0}, [[3.0, -1.0, 2.0]], prompts=[[0]]) == [[2]]
    assert _pick({"repetition_penalty": 1.0}, [[3.0, -1.0, 2.0]], prompts=[[0]]) == [[0]]
    assert local_numpy._Chooser.of(np, {"temperature": 0}, [[0]], 3) is None  # plain argmax
    # a seen negative logit gets more negative: -0.5 * 4 = -2 < -1.5
    assert _pick({"repetition_penalty": 4.0}, [[-0.5, -1.5]], prompts=[[0]]) == [[1]]
    # the token just chosen counts as seen for the next step
    chooser = local_numpy._Chooser(np, {"repetition_penalty": 10.0}, [[]], 2)
    first = chooser.pick(np.array([[1.0, 0.5]], dtype=np.float32)).tolist()
    second = chooser.pick(np.array([[1.0, 0.5]], dtype=np.float32)).tolist()
    assert (first, second) == ([0], [1])


def test_top_p_and_top_k_keep_the_most_likely_tokens():
    probs = [0.6, 0.3, 0.1]
    logits = [[math.log(p) for p in probs]]
    # top_p 0.5: ascending cumulative 0.1, 0.4 <= 0.5 removed, only token 0 stays
    assert set(sum(_pick({"temperature": 1.0, "top_p": 0.5}, logits, times=200), [])) == {0}
    # top_p 0.8: 0.1 removed (0.1 <= 0.2), 0.4 > 0.2 kept: tokens 0 and 1
    drawn = sum(_pick({"temperature": 1.0, "top_p": 0.8}, logits, times=400), [])
    assert set(drawn) == {0, 1}
    assert set(sum(_pick({"temperature": 5.0, "top_k": 1}, logits, times=100), [])) == {0}


def test_draws_follow_the_softmax_at_the_temperature():
    logits = [[math.log(0.2), math.log(0.8)]]
    drawn = sum(_pick({"temperature": 1.0, "seed": 3}, logits, times=4000), [])
    assert abs(drawn.count(1) / len(drawn) - 0.8) < 0.03  # 4000 draws: sd 0.0063
    # temperature 0.5 squares the odds: 0.8^2 / (0.8^2 + 0.2^2) = 0.941
    drawn = sum(_pick({"temperature": 0.5, "seed": 3}, logits, times=4000), [])
    assert abs(drawn.count(1) / len(drawn) - 0.941) < 0.02
