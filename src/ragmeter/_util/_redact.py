"""Removing credentials from URLs and messages before anything is stored or printed.

A user may put a key in an endpoint URL (``http://user:sk-...@host/v1``, ``...?api_key=...``).
:func:`redact_url` keeps the endpoint recognizable and drops the secret: the userinfo becomes
``***@`` and every query parameter whose name looks like a credential gets the value ``***``.
:func:`redact_text` does the same to every URL inside a longer text (an error detail, a
recorded command line).  The backend keeps the full URL privately, for its requests only.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["redact_url", "redact_text", "SECRET_PARAM"]

# Query parameter names that carry credentials (api_key, key, token, access_token, sig, ...).
SECRET_PARAM = re.compile(r"(key|token|secret|password|passwd|pwd|auth|sig|signature|"
                          r"credential|session)", re.IGNORECASE)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()]+")


def redact_url(url: str) -> str:
    """``url`` without its userinfo and with credential-like query values replaced by ***."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "***" if SECRET_PARAM.search(k) else v) for k, v in pairs],
                          safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`."""
    return _URL.sub(lambda m: redact_url(m.group(0)), text)
