"""The backend registry: names to lazily imported backend classes.

Entries are ``"module:attr"`` strings imported on first use, so that ``import ragmeter`` and
``ragmeter --help`` stay light (lm-evaluation-harness's ``lm_eval/api/registry.py``).  The
built-in backends are registered through :func:`register_backend`, the same path a plugin
takes, so that path is always exercised (simonw/llm's plugin design).  An unknown name raises
:class:`~ragmeter.errors.UnknownNameError` with a did-you-mean.

No paid model is ever chosen silently: the default backend is the offline ``local`` one, and the
``openai`` backend needs an explicit ``--model``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragmeter.backends._types import Backend
from ragmeter.errors import ConfigError, UnknownNameError

__all__ = ["BackendSpec", "BackendRecipe", "DEFAULT_BACKEND", "register_backend",
           "backend_names", "backend_spec", "backend_recipe", "create_backend"]

DEFAULT_BACKEND = "local"


@dataclass(frozen=True)
class BackendSpec:
    """What the registry knows about a backend before importing it.

    ``remote`` backends talk HTTP: they accept ``base_url``, ``timeout_s`` and
    ``max_connections`` keyword arguments; local ones do not.
    """

    name: str
    target: str  # "module:attr" of a class or factory called as target(model=..., **opts)
    description: str
    remote: bool = False


_REGISTRY: dict[str, BackendSpec] = {}


def register_backend(name: str, target: str, *, description: str = "", remote: bool = False,
                     replace: bool = False) -> BackendSpec:
    """Register a backend under ``name``; a duplicate name is an error unless ``replace``."""
    if ":" not in target:
        raise ValueError(f"backend target must be 'module:attr', got {target!r}")
    if name in _REGISTRY and not replace:
        raise ValueError(f"backend {name!r} is already registered ({_REGISTRY[name].target})")
    spec = BackendSpec(name=name, target=target, description=description, remote=remote)
    _REGISTRY[name] = spec
    return spec


def backend_names() -> list[str]:
    """Registered backend names, sorted."""
    return sorted(_REGISTRY)


def backend_spec(name: str) -> BackendSpec:
    """The spec of a registered backend; UnknownNameError (with did-you-mean) otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownNameError("backend", name, _REGISTRY, component="models") from None


@dataclass(frozen=True)
class BackendRecipe:
    """How to build a backend, as plain picklable data: the ``"module:attr"`` target and its
    keyword arguments.  :func:`create_backend` builds from one; the Ray engine ships one to each
    worker, which builds its own backend once (the registry of the driver is not needed there).
    """

    name: str
    target: str
    kwargs: tuple[tuple[str, Any], ...] = ()
    remote: bool = False

    def build(self, threads: int | None = None) -> Backend:
        """The backend.  ``threads``: CPU threads for a backend whose constructor takes a
        ``threads`` argument (the local model), unless the recipe sets them; ignored by the
        others (a Ray actor passes the CPUs it reserved)."""
        module_name, _, attr = self.target.partition(":")
        factory = getattr(importlib.import_module(module_name), attr)
        kwargs = dict(self.kwargs)
        if threads is not None and kwargs.get("threads") is None and _takes(factory, "threads"):
            kwargs["threads"] = int(threads)
        return factory(**kwargs)  # type: ignore[no-any-return]


def _takes(factory: Any, name: str) -> bool:
    """Whether ``factory`` (a class or function) has a parameter called ``name``."""
    import inspect

    try:
        return name in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def backend_recipe(name: str = DEFAULT_BACKEND, model: str | None = None,
                   base_url: str | None = None, **opts: Any) -> BackendRecipe:
    """The recipe :func:`create_backend` builds from (same arguments, same checks)."""
    spec = backend_spec(name)
    kwargs: dict[str, Any] = dict(opts)
    if base_url is not None:
        if not spec.remote:
            raise ConfigError(
                f"models: --base-url was given but backend {name!r} runs locally and takes "
                f"no URL. Fix: add --backend openai to call an OpenAI-compatible server.")
        kwargs["base_url"] = base_url
    if not spec.remote:
        for remote_only in ("timeout_s", "max_connections", "api_key"):
            kwargs.pop(remote_only, None)
    kwargs["model"] = model
    return BackendRecipe(name=name, target=spec.target, kwargs=tuple(sorted(kwargs.items())),
                         remote=spec.remote)


def create_backend(name: str = DEFAULT_BACKEND, model: str | None = None,
                   base_url: str | None = None, **opts: Any) -> Backend:
    """Instantiate a backend by name.

    ``model`` and ``base_url`` are passed on when given; other keyword options go to the
    backend's constructor unchanged.  ``base_url`` for a backend that does not talk HTTP is a
    :class:`~ragmeter.errors.ConfigError`.
    """
    return backend_recipe(name, model, base_url, **opts).build()


def _register_builtins(entries: Mapping[str, tuple[str, str, bool]]) -> None:
    for name, (target, description, remote) in entries.items():
        register_backend(name, target, description=description, remote=remote)


_register_builtins({
    "local": ("ragmeter.backends._local._backend:LocalBackend",
              "offline default model (SmolLM2-135M-Instruct on CPU), no network", False),
    "openai": ("ragmeter.backends._openai:OpenAIBackend",
               "any OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama, OpenAI)", True),
})
