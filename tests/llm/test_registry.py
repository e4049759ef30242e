"""The backend registry: lazy entries, did-you-mean, duplicates, no silent paid model."""

from __future__ import annotations

import pytest

from ragmeter.backends import _registry as registry
from ragmeter.backends._openai import OpenAIBackend
from ragmeter.errors import ConfigError, UnknownNameError


def test_builtins_are_registered():
    assert registry.backend_names() == ["local", "openai"]
    assert registry.DEFAULT_BACKEND == "local"
    assert registry.backend_spec("openai").remote
    assert not registry.backend_spec("local").remote


def test_unknown_backend_suggests():
    with pytest.raises(UnknownNameError, match="Did you mean: openai"):
        registry.create_backend("opnai", model="m")


def test_duplicate_registration_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        registry.register_backend("openai", "x:y")


def test_plugin_path_is_the_builtin_path(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    spec = registry.register_backend("mine", "ragmeter.backends._openai:OpenAIBackend")
    assert spec.remote  # read from OpenAIBackend.capabilities: nothing mirrored
    backend = registry.create_backend("mine", model="m", base_url="http://127.0.0.1:1/v1")
    assert isinstance(backend, OpenAIBackend)
    assert backend.identity() == {"backend": "openai", "model": "m",
                                  "base_url": "http://127.0.0.1:1/v1"}


def test_base_url_on_local_is_a_config_error():
    with pytest.raises(ConfigError, match="--backend openai"):
        registry.create_backend("local", base_url="http://127.0.0.1:8000/v1")


def test_openai_needs_a_model():
    with pytest.raises(ConfigError, match="--model"):
        registry.create_backend("openai")
