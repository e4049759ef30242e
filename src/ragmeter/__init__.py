"""ragmeter: measure retrieval-augmented generation systems, exactly and offline.

The public API is what ``__all__`` lists; everything else is private and may change.

One function per CLI verb, ``ragmeter.<family>.<verb>(data, **options)``, each returning a
:class:`ragmeter.result.Result`::

    import ragmeter
    result = ragmeter.multilingual.score(df)          # a path, list of dicts, DataFrame, Table
    result.summary, result.items, result.to_pandas(), result.coverage, result.signature

Families and heavy dependencies load on first use: ``import ragmeter`` stays light.
"""

import importlib as _importlib
from typing import Any as _Any

from ragmeter._version import __version__
from ragmeter.errors import (
    BackendError,
    ConfigError,
    InputError,
    MissingDependencyError,
    RagmeterError,
    ReplayMissError,
    RunFailedError,
    UnknownNameError,
    UserError,
)

# Public submodules and functions, imported on first attribute access.
_LAZY = {
    "criteria": "ragmeter.criteria",
    "app": "ragmeter.app",
    "multilingual": "ragmeter.multilingual",
    "reliability": "ragmeter.reliability",
    "retrieval": "ragmeter.retrieval",
    "rgb": "ragmeter.rgb",
    "trace": "ragmeter.trace",
    "rubric": "ragmeter.rubric",
    "backends": "ragmeter.backends",
    "testing": "ragmeter.testing",
    "judges": "ragmeter.judges",
    "judging": "ragmeter.judges",  # the name before the one-spine layout (issue 24)
    "Result": "ragmeter.result:Result",
    "RunOptions": "ragmeter._verb._options:RunOptions",
    "OutputOptions": "ragmeter._verb._options:OutputOptions",
    "EngineOptions": "ragmeter._verb._options:EngineOptions",
    "generate": "ragmeter._verb._generate:generate",
    "agenerate": "ragmeter._verb._generate:agenerate",
    "demo": "ragmeter._demo._demo:demo",
    "ademo": "ragmeter._demo._demo:ademo",
}

__all__ = [
    "__version__",
    "BackendError",
    "ConfigError",
    "InputError",
    "MissingDependencyError",
    "RagmeterError",
    "ReplayMissError",
    "RunFailedError",
    "UnknownNameError",
    "UserError",
    "EngineOptions",
    "OutputOptions",
    "Result",
    "RunOptions",
    "ademo",
    "agenerate",
    "app",
    "backends",
    "criteria",
    "demo",
    "generate",
    "judges",
    "judging",
    "multilingual",
    "reliability",
    "retrieval",
    "rgb",
    "rubric",
    "testing",
    "trace",
]


def __getattr__(name: str) -> _Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'ragmeter' has no attribute {name!r}")
    module_name, _, attr = target.partition(":")
    module = _importlib.import_module(module_name)
    value = getattr(module, attr) if attr else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
