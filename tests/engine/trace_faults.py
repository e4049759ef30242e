"""A detector that fails on chosen rows, for the Ray detector tests: importable by the
cluster's workers (their PYTHONPATH has this checkout), so the failure happens on a worker."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ragmeter.trace._detector import Detector

MARK = "[boom]"


@dataclass(frozen=True)
class FailingDetector(Detector):
    """The shipped detector, but a row whose question contains :data:`MARK` raises."""

    def label(self, question: str, documents_sentences: Any, response_sentences: Any,
              vectors: Any = None) -> dict[str, Any]:
        if MARK in question:
            raise ValueError(f"cannot label {question!r}")
        return super().label(question, documents_sentences, response_sentences, vectors)


def failing(det: Detector) -> FailingDetector:
    return FailingDetector(**{f.name: getattr(det, f.name) for f in fields(det)})
