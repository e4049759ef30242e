"""No domain: the per-user home folder, credential redaction and the finite-number check."""

from __future__ import annotations

from ragmeter._util._console import console
from ragmeter._util._home import (
    data_home,
)
from ragmeter._util._numbers import (
    check_number,
    is_finite_number,
    number_problem,
)
from ragmeter._util._redact import (
    SECRET_PARAM,
    redact_text,
    redact_url,
)

__all__ = [
    "console",
    "check_number",
    "is_finite_number",
    "number_problem",
    "SECRET_PARAM",
    "data_home",
    "redact_text",
    "redact_url",
]
