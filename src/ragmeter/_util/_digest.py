"""SHA-256 without importing :mod:`hashlib` (issue 26.5).

``hashlib`` builds a constructor for every algorithm it knows and imports ``_blake2`` when it
is first imported, about 0.5 ms of a judged command's start-up spent before its first call,
only to hash the request keys with SHA-256.  OpenSSL's SHA-256 is taken from ``_hashlib``
(the module behind ``hashlib.sha256``, the same digest and the same speed); a Python built
without it falls back to ``hashlib``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["sha256"]

try:
    from _hashlib import openssl_sha256 as _sha256
except ImportError:  # pragma: no cover - a Python without OpenSSL's hashes
    from hashlib import sha256 as _sha256


def sha256(data: bytes = b"") -> Any:
    """A SHA-256 hash object of ``data``, as ``hashlib.sha256(data)`` returns."""
    return _sha256(data)
