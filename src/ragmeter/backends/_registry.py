"""The backend registry: names to lazily imported backend classes.

Entries are ``"module:attr"`` strings imported on first use, so that ``import ragmeter`` and
``ragmeter --help`` stay light (lm-evaluation-harness's ``lm_eval/api/registry.py``).  The
built-in backends are registered through :func:`register_backend`, the same path a plugin
takes, so that path is always exercised (simonw/llm's plugin design).  An unknown name raises
:class:`~ragmeter.errors.UnknownNameError` with a did-you-mean.

Third-party backends come from the ``ragmeter.backends`` entry-point group (a package's
``[project.entry-points."ragmeter.backends"]`` table: ``name = "module:BackendClass"``).  The
group is read lazily, when a name is not registered yet (and to list every name); the plugin
named is then imported and registered with :func:`register_backend`, its description and
:class:`~ragmeter.backends._types.Capabilities` read from its class.  A plugin that cannot be
imported, or whose class declares no capabilities, is a :class:`~ragmeter.errors.ConfigError`
naming it and the distribution that installed it.

What a backend can do is declared by its class (``capabilities``); a built-in's spec mirrors
that declaration (``tests/llm/test_capabilities.py`` checks they agree), so decisions made
before the class is imported (does it take ``--base-url``?) need no import.

No paid model is ever chosen silently: the default backend is the offline ``local`` one, and the
``openai`` backend needs an explicit ``--model``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from ragmeter._util._record import record, set_field
from ragmeter.backends._types import Backend, Capabilities
from ragmeter.errors import ConfigError, UnknownNameError

__all__ = ["BackendSpec", "BackendRecipe", "DEFAULT_BACKEND", "ENTRY_POINT_GROUP",
           "register_backend", "backend_names", "backend_spec", "backend_class",
           "backend_recipe", "create_backend"]

DEFAULT_BACKEND = "local"
ENTRY_POINT_GROUP = "ragmeter.backends"


@record()  # a plain class, no dataclass (issue 26.5)
class BackendSpec:
    """What the registry knows about a backend before importing it.

    ``mirror``: the class's :class:`Capabilities`, copied here so that a decision needs no
    import (None: read from the class when first asked).  ``plugin``: the distribution whose
    entry point registered it (None for the built-ins and for :func:`register_backend` calls).
    """

    __slots__ = ("name", "target", "description", "mirror", "plugin")
    name: str
    target: str  # "module:attr" of a class called as target(model=..., **opts)
    description: str
    mirror: Capabilities | None
    plugin: str | None

    def __init__(self, name: str, target: str, description: str,
                 mirror: Capabilities | None = None, plugin: str | None = None) -> None:
        set_field(self, "name", name)
        set_field(self, "target", target)
        set_field(self, "description", description)
        set_field(self, "mirror", mirror)
        set_field(self, "plugin", plugin)

    @property
    def capabilities(self) -> Capabilities:
        """What the backend declares it can do (its class's ``capabilities``)."""
        if self.mirror is not None:
            return self.mirror
        return _declared(self.name, _load_target(self.name, self.target, self.plugin),
                         self.target, self.plugin)

    @property
    def remote(self) -> bool:
        """Talks HTTP: takes ``base_url``, ``timeout_s``, ``max_connections``, ``api_key``."""
        return self.capabilities.remote


_REGISTRY: dict[str, BackendSpec] = {}


def register_backend(name: str, target: str, *, description: str = "",
                     capabilities: Capabilities | None = None, plugin: str | None = None,
                     replace: bool = False) -> BackendSpec:
    """Register a backend under ``name``; a duplicate name is an error unless ``replace``.

    ``target`` is ``"module:Class"``, imported on first use.  ``capabilities`` mirrors the
    class's own declaration so that it can be read without importing the class; when not
    given it is read from the class when first needed.
    """
    if ":" not in target:
        raise ValueError(f"backend target must be 'module:attr', got {target!r}")
    if name in _REGISTRY and not replace:
        raise ValueError(f"backend {name!r} is already registered ({_REGISTRY[name].target})")
    spec = BackendSpec(name=name, target=target, description=description, mirror=capabilities,
                       plugin=plugin)
    _REGISTRY[name] = spec
    return spec


def _entry_points() -> dict[str, Any]:
    """The ``ragmeter.backends`` entry points of the installed distributions, by name (the
    first one found wins, as Python's import does)."""
    from importlib.metadata import entry_points

    found: dict[str, Any] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return found


def _distribution(ep: Any) -> str:
    dist = ep.dist
    return str(dist.name) if dist is not None else "an unknown distribution"


def _plugin_error(name: str, target: str, plugin: str | None, problem: str) -> ConfigError:
    where = (f"plugin backend {name!r} ({target}, entry point of {plugin})" if plugin
             else f"backend {name!r} ({target})")
    fix = (f"reinstall or uninstall {plugin}" if plugin
           else "check the target given to register_backend")
    return ConfigError(f"models: {where} {problem}. Fix: {fix}.")


def _load_target(name: str, target: str, plugin: str | None) -> Any:
    """The class a ``"module:attr"`` target names; a clear ConfigError if it cannot load."""
    module_name, _, attr = target.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except Exception as exc:  # any failure of third-party code becomes one clear error
        raise _plugin_error(name, target, plugin,
                            f"cannot be loaded ({type(exc).__name__}: {exc})") from exc


def _declared(name: str, cls: Any, target: str, plugin: str | None) -> Capabilities:
    """The ``capabilities`` a backend class declares; an error naming it when it has none."""
    try:
        caps = cls.capabilities
    except AttributeError:
        caps = None
    if not isinstance(caps, Capabilities):
        raise _plugin_error(name, target, plugin,
                            "declares no capabilities (a ragmeter.backends.Capabilities as "
                            "its class attribute 'capabilities'; subclassing "
                            "ragmeter.backends.BaseBackend gives the defaults)")
    return caps


def _register_plugin(ep: Any) -> BackendSpec:
    """Import the plugin an entry point names and register it (the built-ins' path)."""
    target = f"{ep.module}:{ep.attr}"
    plugin = _distribution(ep)
    cls = _load_target(ep.name, target, plugin)
    caps = _declared(ep.name, cls, target, plugin)
    doc = (cls.__doc__ or "").strip()
    description = doc.splitlines()[0] if doc else f"plugin from {plugin}"
    return register_backend(ep.name, target, description=description, capabilities=caps,
                            plugin=plugin)


def backend_names() -> list[str]:
    """Registered backend names and those of installed plugins (not imported), sorted."""
    return sorted(set(_REGISTRY) | set(_entry_points()))


def backend_spec(name: str) -> BackendSpec:
    """The spec of a registered backend, or of the installed plugin of that name (imported
    and registered now); UnknownNameError (with did-you-mean) otherwise."""
    spec = _REGISTRY.get(name)
    if spec is not None:
        return spec
    plugins = _entry_points()
    if name in plugins:
        return _register_plugin(plugins[name])
    raise UnknownNameError("backend", name, set(_REGISTRY) | set(plugins), component="models")


def backend_class(name: str) -> Any:
    """The class of a registered backend (imported now), for what it says without an
    instance: its token counter, its readiness."""
    spec = backend_spec(name)
    cls = _load_target(spec.name, spec.target, spec.plugin)
    _declared(spec.name, cls, spec.target, spec.plugin)
    return cls


@record()
class BackendRecipe:
    """How to build a backend, as plain picklable data: the ``"module:attr"`` target and its
    keyword arguments.  :func:`create_backend` builds from one; the Ray engine ships one to each
    worker, which builds its own backend once (the registry of the driver is not needed there).
    """

    __slots__ = ("name", "target", "kwargs", "remote")
    name: str
    target: str
    kwargs: tuple[tuple[str, Any], ...]
    remote: bool

    def __init__(self, name: str, target: str, kwargs: tuple[tuple[str, Any], ...] = (),
                 remote: bool = False) -> None:
        set_field(self, "name", name)
        set_field(self, "target", target)
        set_field(self, "kwargs", kwargs)
        set_field(self, "remote", remote)

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
    remote = spec.capabilities.remote
    kwargs: dict[str, Any] = dict(opts)
    if base_url is not None:
        if not remote:
            raise ConfigError(
                f"models: --base-url was given but backend {name!r} runs locally and takes "
                f"no URL. Fix: add --backend openai to call an OpenAI-compatible server.")
        kwargs["base_url"] = base_url
    if not remote:
        for remote_only in ("timeout_s", "max_connections", "api_key"):
            kwargs.pop(remote_only, None)
    kwargs["model"] = model
    return BackendRecipe(name=name, target=spec.target, kwargs=tuple(sorted(kwargs.items())),
                         remote=remote)


def create_backend(name: str = DEFAULT_BACKEND, model: str | None = None,
                   base_url: str | None = None, **opts: Any) -> Backend:
    """Instantiate a backend by name.

    ``model`` and ``base_url`` are passed on when given; other keyword options go to the
    backend's constructor unchanged.  ``base_url`` for a backend that does not talk HTTP is a
    :class:`~ragmeter.errors.ConfigError`.
    """
    return backend_recipe(name, model, base_url, **opts).build()


def _register_builtins(entries: Mapping[str, tuple[str, str, Capabilities]]) -> None:
    for name, (target, description, capabilities) in entries.items():
        register_backend(name, target, description=description, capabilities=capabilities)


# Mirrors of LocalBackend.capabilities and OpenAIBackend.capabilities (test_capabilities.py).
_register_builtins({
    "local": ("ragmeter.backends._local._backend:LocalBackend",
              "offline default model (SmolLM2-135M-Instruct on CPU), no network",
              Capabilities(in_process=True, choice_scoring=True, batching=True)),
    "openai": ("ragmeter.backends._openai:OpenAIBackend",
               "any OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama, OpenAI)",
               Capabilities(remote=True, choice_scoring=None)),
})
