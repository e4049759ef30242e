"""Request keys after the start-up work of issue 26.5 (SHA-256 taken from ``_hashlib``, one
canonical JSON encoder kept): the same keys as before, so every existing store still hits."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter._util._digest import sha256
from ragmeter._util._redact import redact_url
from ragmeter.backends._types import Request, canonical_json

IDENTITY = {"backend": "openai", "model": "m", "base_url": "http://h/v1"}


def test_a_request_key_is_the_one_main_computed():
    # golden: computed on main before this change (hashlib.sha256 of json.dumps(...,
    # sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    request = Request.chat("q1", [{"role": "system", "content": "Be brief."},
                                  {"role": "user", "content": "Ça va? 東京"}],
                           params={"temperature": 0, "max_tokens": 64, "user": "x"},
                           choices=["yes", "no"], repeat=2)
    assert request.cache_key(IDENTITY) == (
        "v1:c817f0ef401746647266610faeda3ed556c727bd4e1404c9ce0a18f5e347da17")


def test_a_redacted_url_segment_keeps_its_digest():
    # golden: main's output for the same URL
    assert redact_url("http://h/v1/sk-abcdefghijklmnopqrstuvwx/chat") == (
        "http://h/v1/***3631b5f1/chat")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_canonical_json_is_json_dumps(value):
    assert canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":"),
                                               ensure_ascii=False)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_sha256_is_hashlibs(data):
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    grown = sha256()
    grown.update(data)
    assert grown.digest() == hashlib.sha256(data).digest()
