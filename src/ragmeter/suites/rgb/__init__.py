"""RGB (Chen et al., AAAI 2024): data loading, document selection, prompts, labelling, scoring
and the benchmark run, reproducing chen700564/RGB @ 65ec39e (evalue.py, reject_evalue.py,
fact_evalue.py)."""

from ragmeter.suites.rgb.build import BuildConfig, build_rows
from ragmeter.suites.rgb.data import RgbDataset, RgbInstance, load_dataset
from ragmeter.suites.rgb.prompts import (
    JudgePrompts,
    RgbPrompts,
    build_judge_message,
    build_messages,
    load_judge_prompts,
    load_prompts,
)
from ragmeter.suites.rgb.scoring import (
    Prediction,
    RgbScore,
    read_predictions,
    score_predictions,
    signature_for,
)
from ragmeter.suites.rgb.selection import select_docs

__all__ = [
    "BuildConfig", "build_rows", "RgbDataset", "RgbInstance", "load_dataset", "JudgePrompts",
    "RgbPrompts", "build_judge_message", "build_messages", "load_judge_prompts", "load_prompts",
    "Prediction", "RgbScore", "read_predictions", "score_predictions", "signature_for",
    "select_docs",
]
