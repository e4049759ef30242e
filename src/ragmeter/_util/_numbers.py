"""The one check every number from a user passes where it enters (issue 29.3).

A price, a limit, a threshold or a rate that is ``nan``, ``inf`` or too large for a float
would pass the usual range checks (``nan < 0`` and ``nan > 1`` are both false; ``inf >= 0``
is true) and fail much later: after every call was paid for, or as a traceback.
:func:`check_number` refuses such a value at once with one line; every door calls it with its
own name for the value: the CLI's click types (``--price-in``), the Python API's option values
(``price_prompt=``), the web app's form fields (their labels), and the readers of data files
(a field, a line).

::

    check_number(value, "price_prompt=", lo=0)          # ConfigError on nan, inf, -1, "x"
    check_number(value, "concurrency=", lo=1, whole=True)
"""

from __future__ import annotations

import math
from typing import Any

from ragmeter.errors import ConfigError

__all__ = ["check_number", "number_problem", "is_finite_number", "FINITE_FIX"]

FINITE_FIX = "give a finite number (nan, inf and values beyond ±1.8e308 are refused)"


def is_finite_number(value: Any) -> bool:
    """True for an int or float (not a bool) that is finite and fits in a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond the float range (10**400)
        return False


def number_problem(value: Any, *, lo: float | None = None, hi: float | None = None,
                   lo_open: bool = False, whole: bool = False) -> str | None:
    """What is wrong with ``value`` as a finite number within ``[lo, hi]`` (``lo_open``:
    ``(lo, hi]``; ``whole``: an integer), as ``"must be ..., got X. Fix: ..."``; None when
    nothing is.  :func:`check_number` and the CLI's click type (``ragmeter.cli.options``)
    both render it."""
    what = "a whole number" if whole else "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be {what}, got {_shown(value)}. Fix: give {what}."
    if not is_finite_number(value):
        return f"must be a finite number, got {_shown(value)}. Fix: {FINITE_FIX}."
    if whole and not isinstance(value, int) and not float(value).is_integer():
        return f"must be a whole number, got {_shown(value)}. Fix: give a whole number."
    too_low = lo is not None and (value <= lo if lo_open else value < lo)
    if too_low or (hi is not None and value > hi):
        if lo is not None and hi is not None:
            span = f"in {'(' if lo_open else '['}{lo:g}, {hi:g}]"
        elif lo is not None:
            span = f"{'above' if lo_open else 'at least'} {lo:g}"
        else:
            span = f"at most {hi:g}"
        return f"must be {span}, got {_shown(value)}. Fix: give a number {span}."
    return None


def check_number(value: Any, name: str, *, lo: float | None = None, hi: float | None = None,
                 lo_open: bool = False, whole: bool = False,
                 component: str = "ragmeter") -> Any:
    """``value`` itself when it is a finite number within ``[lo, hi]`` (``lo_open``:
    ``(lo, hi]``); ``whole`` asks for an integer (``8.0`` is returned as ``8``).  Else a
    one-line :class:`~ragmeter.errors.ConfigError` naming ``name`` as the caller's door
    spells it (``--price-in``, ``price_prompt=``, a form label), the value and the fix.
    """
    problem = number_problem(value, lo=lo, hi=hi, lo_open=lo_open, whole=whole)
    if problem is not None:
        raise ConfigError(f"{component}: {name} {problem}")
    return int(value) if whole else value


def _shown(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
