"""Building RGB prompts: one row per instance with the documents and messages evalue.py sends."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ragmeter.errors import ConfigError
from ragmeter.rgb._data import RgbDataset
from ragmeter.rgb._metrics import setting_label
from ragmeter.rgb._prompts import RgbPrompts, build_messages
from ragmeter.rgb._selection import DEFAULT_PASSAGE_NUM, DEFAULT_SEED, select_docs

__all__ = ["BuildConfig", "build_rows"]


@dataclass(frozen=True)
class BuildConfig:
    """One setting of evalue.py: ``--noise_rate``, ``--passage_num``, ``--correct_rate``."""

    noise_rate: float
    passage_num: int = DEFAULT_PASSAGE_NUM
    correct_rate: float = 0.0
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        for name, value in (("noise rate", self.noise_rate), ("correct rate", self.correct_rate)):
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"rgb: the {name} must be in [0, 1], got {value}.")
        if self.passage_num < 0:
            raise ConfigError(f"rgb: the passage number must be >= 0, got {self.passage_num}.")

    def label(self) -> str:
        """A short name of the setting, e.g. ``noise0.4`` or ``noise0.0_correct0.2_p0``."""
        return setting_label(self.noise_rate, self.correct_rate, self.passage_num)


def build_rows(dataset: RgbDataset, prompts: RgbPrompts, config: BuildConfig,
               ) -> Iterator[dict[str, Any]]:
    """Rows ``{"id", "query", "answer", "docs", "messages", ...}`` in file order; ``docs`` is
    what evalue.py would send, element for element and in order."""
    system, instruction = prompts.for_lang(dataset.lang)
    for inst in dataset.instances:
        docs = select_docs(inst, dataset.kind, config.noise_rate, config.passage_num,
                           config.correct_rate, config.seed)
        yield {
            "id": inst.id,
            "query": inst.query,
            "answer": inst.answer,
            "docs": docs,
            "messages": build_messages(system, instruction, inst.query, docs),
            "noise_rate": config.noise_rate,
            "correct_rate": config.correct_rate,
            "passage_num": config.passage_num,
            "kind": dataset.kind,
            "lang": dataset.lang,
            "prompt_version": prompts.version,
        }
