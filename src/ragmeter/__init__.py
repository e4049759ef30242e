"""ragmeter: measure retrieval-augmented generation systems, exactly and offline.

The public API is what ``__all__`` lists; everything else is private and may change.
"""


from ragmeter._version import __version__
from ragmeter.errors import (
    BackendError,
    ConfigError,
    InputError,
    MissingDependencyError,
    RagmeterError,
    ReplayMissError,
    UnknownNameError,
    UserError,
)

__all__ = [
    "__version__",
    "BackendError",
    "ConfigError",
    "InputError",
    "MissingDependencyError",
    "RagmeterError",
    "ReplayMissError",
    "UnknownNameError",
    "UserError",
]
