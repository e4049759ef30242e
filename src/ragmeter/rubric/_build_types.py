"""The test-set builder's shared types: :class:`BuildConfig` (the options of ``rubric build``)
and :class:`BuildOutcome` (what it produced), in their own module so that the builder and its
translation step share them without importing each other."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ragmeter.errors import ConfigError
from ragmeter.rubric._build_prompts import CRITERIA, BuildPrompts
from ragmeter.rubric._chunking import Chunking
from ragmeter.rubric._metrics import BUILD_VERSION
from ragmeter.rubric._options import DEFAULT_AUDIENCE
from ragmeter.runs._schema import Signature

__all__ = ["BuildConfig", "BuildOutcome", "DEFAULT_THRESHOLDS", "DEFAULT_AUDIENCE"]

COMPONENT = "rubric"
CritiqueScoring = Literal["generate", "choices"]
RATING_CHOICES = ("1", "2", "3", "4", "5")
DEFAULT_THRESHOLDS: Mapping[str, int] = {"groundedness": 4, "relevance": 4, "standalone": 4}


@dataclass(frozen=True)
class BuildConfig:
    """Options of ``rubric build`` (the CLI flags, snake_case, with the CLI's defaults)."""

    chunking: Chunking = "sections"
    chunk_size: int = 4000
    min_chunk_chars: int = 50
    sample: int | None = None
    seed: int = 0
    thresholds: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    audience: str = DEFAULT_AUDIENCE
    dedupe: bool = True
    languages: tuple[str, ...] = ()
    source_language: str = "en"
    translate_knowledge_base: bool = False
    n_resamples: int = 1000
    critique_scoring: CritiqueScoring = "generate"

    def __post_init__(self) -> None:
        unknown = set(self.thresholds) - set(CRITERIA)
        if unknown:
            raise ConfigError(f"rubric: unknown criterion {sorted(unknown)[0]!r} in the "
                              f"thresholds; known: {', '.join(CRITERIA)}.")
        for name, value in self.thresholds.items():
            if not 1 <= int(value) <= 5:
                raise ConfigError(f"rubric: --min-{name} must be 1..5, got {value}.")
        if self.source_language in self.languages:
            raise ConfigError(f"rubric: --languages contains the source language "
                              f"{self.source_language!r}; give only the target languages.")

    def signature(self, prompts: BuildPrompts, model: str) -> str:
        settings: dict[str, Any] = {
            "prompt": prompts.version, "critic": model, "chunking": self.chunking,
            "min": ",".join(f"{c}{self.thresholds.get(c, 1)}" for c in CRITERIA),
            "dedupe": "yes" if self.dedupe else "no", "critique": self.critique_scoring}
        if self.chunking == "sections":
            settings["chunk_size"] = self.chunk_size
        if self.sample is not None:
            settings["sample"] = f"{self.sample}@seed{self.seed}"
        return Signature.make(COMPONENT, BUILD_VERSION, settings).render()


@dataclass
class BuildOutcome:
    """What a build produced: ``summary`` (the ``--json`` document), ``items`` (one row per
    candidate question, kept or not, with its reason), ``questions`` (the kept rows in
    RAGaliq's format), ``translations`` (language -> rows) and ``knowledge_base``
    (language -> ``{file name: [{idx, source, translation}]}``)."""

    summary: dict[str, Any]
    items: list[dict[str, Any]]
    questions: list[dict[str, Any]]
    translations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    knowledge_base: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return self.summary

    def iter_items(self) -> list[dict[str, Any]]:
        return self.items
