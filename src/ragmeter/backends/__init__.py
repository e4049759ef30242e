"""Everything that calls a model: the request/response types, the :class:`Backend` protocol
with declared capabilities, the registry (built-ins and the ``ragmeter.backends`` entry-point
group), OpenAI-compatible endpoints, token counting, and the offline local model.

::

    import ragmeter
    judge = ragmeter.backends.openai("gpt-4o-mini", base_url="http://127.0.0.1:8000/v1")
    offline = ragmeter.backends.local()          # SmolLM2-135M, no network
"""

from __future__ import annotations

from ragmeter.backends._registry import (
    BackendRecipe,
    BackendSpec,
    backend_names,
    backend_spec,
    create_backend,
    register_backend,
)
from ragmeter.backends._types import (
    Backend,
    BaseBackend,
    Capabilities,
    Message,
    Readiness,
    Request,
    Response,
    Usage,
)
from ragmeter.backends._values import (
    ModelBackend,
    capabilities_of,
    endpoint,
    from_options,
    local,
    openai,
    resolve,
    scores_choices,
)

__all__ = [
    "Backend",
    "BackendRecipe",
    "BackendSpec",
    "BaseBackend",
    "Capabilities",
    "Message",
    "ModelBackend",
    "Readiness",
    "Request",
    "Response",
    "Usage",
    "backend_names",
    "backend_spec",
    "capabilities_of",
    "create_backend",
    "endpoint",
    "from_options",
    "local",
    "openai",
    "register_backend",
    "resolve",
    "scores_choices",
]
