"""``ragmeter.demo()``: the built-in sample through every family, ending with one report.

A private package (``_demo``) because the public name ``ragmeter.demo`` is the function."""

from __future__ import annotations

from ragmeter._demo._demo import (
    DemoResult,
    ademo,
    demo,
)

__all__ = [
    "DemoResult",
    "ademo",
    "demo",
]
