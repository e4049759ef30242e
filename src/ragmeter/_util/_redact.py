"""Removing credentials from URLs and messages before anything is stored or printed.

A user may put a key in an endpoint URL (``http://user:sk-...@host/v1``, ``...?api_key=...``,
``https://host/sk-.../v1``).  :func:`redact_url` keeps the endpoint recognizable and drops the
secret: the userinfo becomes ``***@``, every query parameter whose name looks like a credential
gets the value ``***``, and a path segment that looks like a key (:func:`_secret_segment`)
becomes ``***`` and a short fingerprint (``***5e1c09a2``), so that two endpoints that differ
only there stay two endpoints in the store of calls, whose keys are built from the redacted
URL (issue 29.5).
:func:`redact_text` does the same to every URL inside a longer text (an error detail, a
recorded command line).  The backend keeps the full URL privately, for its requests only.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ragmeter._util._digest import sha256

__all__ = ["redact_url", "redact_text", "SECRET_PARAM"]

# Query parameter names that carry credentials (api_key, key, token, access_token, sig, ...).
SECRET_PARAM = re.compile(r"(key|token|secret|password|passwd|pwd|auth|sig|signature|"
                          r"credential|session)", re.IGNORECASE)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()]+")
# Path segments: a key's usual prefix (OpenAI sk-, Groq gsk_, xAI xai-, Hugging Face hf_,
# GitHub ghp_/github_pat_, GitLab glpat-, Google AIza) before 8 or more key characters; or a
# long run of key characters with letters and digits (32 or more: a hex or base64 key, a
# UUID); or anything after a segment that says it is a key (``/key/VALUE``, ``/token/VALUE``).
# The first two match nothing shorter than 11 characters (``hf-`` and 8), so they are compiled
# when a segment that long is first seen: a plain endpoint (``/v1``) compiles neither before a
# judged command's first call (issue 26.5).
_SHORTEST_KEY = 11


@functools.cache
def _key_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(a key's usual prefix and its characters, a long run of key characters)."""
    return (re.compile(r"(sk|pk|rk|gsk|xai|hf|ghp|gho|ghs|github_pat|glpat|key|api[-_]?key)"
                       r"[-_][A-Za-z0-9_\-]{8,}|AIza[A-Za-z0-9_\-]{30,}", re.IGNORECASE),
            re.compile(r"(?=[^/]*[0-9])(?=[^/]*[A-Za-z])[A-Za-z0-9_\-.~+=%]{32,}"))


_KEY_NAME = re.compile(r"(api[-_]?)?(key|token|secret|password|auth|access[-_]?token)s?",
                       re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` without its userinfo and with credential-like query values replaced by ***."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rpartition("@")[2]
    segments = parts.path.split("/")
    path = "/".join(_redacted_segment(seg) if _secret_segment(seg, segments[i - 1] if i else "")
                    else seg for i, seg in enumerate(segments))
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "***" if SECRET_PARAM.search(k) else v) for k, v in pairs],
                          safe="*")
    return urlunsplit((parts.scheme, netloc, path, query, parts.fragment))


def _secret_segment(segment: str, previous: str) -> bool:
    """Whether a URL path segment looks like a credential (see the patterns above)."""
    if not segment or segment == "***" or segment.startswith("***"):
        return False
    if _KEY_NAME.fullmatch(previous):
        return True
    return len(segment) >= _SHORTEST_KEY and any(p.fullmatch(segment) for p in _key_patterns())


def _redacted_segment(segment: str) -> str:
    """``***`` and 8 hex digits of the segment's SHA-256: not the secret, but still one
    endpoint per secret."""
    return "***" + sha256(segment.encode("utf-8")).hexdigest()[:8]


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`."""
    return _URL.sub(lambda m: redact_url(m.group(0)), text)
