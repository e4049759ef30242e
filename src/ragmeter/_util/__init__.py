"""No domain: the per-user home folder and credential redaction."""

from __future__ import annotations

from ragmeter._util._console import console
from ragmeter._util._home import (
    data_home,
)
from ragmeter._util._redact import (
    SECRET_PARAM,
    redact_text,
    redact_url,
)

__all__ = [
    "console",
    "SECRET_PARAM",
    "data_home",
    "redact_text",
    "redact_url",
]
