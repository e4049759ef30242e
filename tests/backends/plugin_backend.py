"""Backends a third party could ship, defined in the test suite and installed as real
``ragmeter.backends`` entry points by ``tests/backends/test_plugins.py`` (nothing in ragmeter
names them)."""

from __future__ import annotations

from typing import Any, ClassVar

from ragmeter.backends import BaseBackend, Capabilities, Request, Response, Usage


class PluginBackend(BaseBackend):
    """Echo backend from a plugin: scores choices, first choice likeliest."""

    name = "yourplugin"
    capabilities = Capabilities(choice_scoring=True)
    calls: ClassVar[list[Request]] = []  # every call of every instance (the tests reset it)

    def __init__(self, model: str | None = None) -> None:
        self.model = model or "echo-1"

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.model}

    async def complete(self, request: Request) -> Response:
        PluginBackend.calls.append(request)
        if request.choices is not None:
            # weights n, n-1, ..., 1 over the choices, normalized
            n = len(request.choices)
            total = n * (n + 1) / 2
            probs = {c: (n - i) / total for i, c in enumerate(request.choices)}
            return Response(request.choices[0], Usage(7, 1), choice_probs=probs,
                            choice_method="logits")
        return Response('{"score": 1.0, "explanation": "echo"}', Usage(7, 9))


class Undeclared:
    """A plugin class that declares no capabilities."""

    name = "undeclared"

    def __init__(self, model: str | None = None) -> None:
        self.model = model
