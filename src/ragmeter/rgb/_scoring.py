"""Scoring RGB predictions exactly as evalue.py, with coverage and a signature.

Every instance of the data file gets an item: ``ok`` with its labels, or ``unscored`` with a
reason (``missing_prediction`` when the predictions have no row for its id, ``null_prediction``
when the row's prediction is null, or the runner's reason for a failed call).  ``accuracy`` is
over the scored items, like evalue.py whose ``results`` hold only the instances that went
through; ``coverage`` says how many were left out and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError
from ragmeter.io import Row, as_text, iter_rows
from ragmeter.rgb import _metrics as qa_rgb
from ragmeter.rgb._build import BuildConfig
from ragmeter.rgb._data import COMPONENT, RgbDataset
from ragmeter.rgb._metrics import METRICS, metric_version
from ragmeter.rgb._refactor import RefactorTally
from ragmeter.stats._metric import MetricTable

if TYPE_CHECKING:  # the run-record schema loads after a run's first call (issue 26.5)
    from ragmeter.runs._schema import Coverage

__all__ = ["Prediction", "RgbScore", "read_predictions", "score_predictions", "signature_for",
           "build_signature", "mode_label"]

MODES = ("strict", "lenient", "refactor")


@dataclass(frozen=True)
class Prediction:
    """A raw model output, or None with the reason it is missing."""

    text: str | None
    reason: str | None = None
    detail: str | None = None


@dataclass
class RgbScore:
    dataset: str
    kind: str
    lang: str
    config: BuildConfig
    mode: str
    metrics: dict[str, Any]
    coverage: Coverage
    signature: str
    items: list[dict[str, Any]] = field(repr=False)
    lenient: dict[str, Any] | None = None
    refactor: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": 1, "family": COMPONENT, "dataset": self.dataset,
            "kind": self.kind, "lang": self.lang, "noise_rate": self.config.noise_rate,
            "setting": {"noise_rate": self.config.noise_rate,
                        "correct_rate": self.config.correct_rate,
                        "passage_num": self.config.passage_num, "seed": self.config.seed},
            "mode": self.mode, **self.metrics,
            "coverage": self.coverage.model_dump(), "signature": self.signature,
        }
        if self.lenient is not None:
            out["lenient"] = self.lenient
        if self.refactor is not None:
            out["refactor"] = self.refactor
        if self.notes:
            out["notes"] = self.notes
        return out


def _require(row: Row, name: str, *, component: str) -> Any:
    """A required field; the error lists the fields found and the fields expected."""
    if name not in row.data:
        found = ", ".join(sorted(map(str, row.data))[:15]) or "none"
        raise row.error(f"is missing (required). Found fields: {found}.", component=component,
                        field=name, fix="give each row the fields id and prediction.")
    return row.data[name]


def _setting_fields(dataset: RgbDataset, config: BuildConfig) -> dict[str, Any]:
    """The data and setting of a signature (the correct rate only where it applies: _fact)."""
    out: dict[str, Any] = {"data": dataset.name, "kind": dataset.kind, "lang": dataset.lang,
                           "noise": config.noise_rate, "passages": config.passage_num,
                           "seed": config.seed}
    if dataset.kind == "fact":
        out["correct"] = config.correct_rate
    return out


def signature_for(dataset: RgbDataset, config: BuildConfig, *, mode: str = "strict",
                  prompts: str | None = None, model: str | None = None,
                  judge: str | None = None, table: MetricTable = METRICS) -> str:
    """The signature of one scored setting; ``metrics:`` is :func:`metric_version` of
    ``table`` (its version, and a digest of its constants when they are not the released
    ones)."""
    from ragmeter.runs._schema import Signature

    settings = {**_setting_fields(dataset, config), "labels": mode_label(mode),
                "prompts": prompts, "model": model, "judge": judge}
    return Signature.make(COMPONENT, metric_version(table), settings).render()


def build_signature(dataset: RgbDataset, config: BuildConfig, prompts: str) -> str:
    """``rgb build``'s signature: what selected the documents and wrote the messages."""
    from ragmeter.runs._schema import Signature

    return Signature.make(COMPONENT, metric_version(),
                          {**_setting_fields(dataset, config), "prompts": prompts}).render()


def mode_label(mode: str) -> str:
    """How a mode shows in signatures: the extra labels are never the paper's."""
    return {"strict": "strict", "lenient": "lenient(not-paper)",
            "refactor": "refactor(not-paper)"}.get(mode, mode)


def read_predictions(path: Any) -> dict[str, Prediction]:
    """Rows ``{"id", "prediction"}`` (JSONL/JSON/CSV/Parquet, or in-memory rows: a list of
    dicts, a DataFrame, an Arrow table) keyed by the id as text."""
    out: dict[str, Prediction] = {}
    places: dict[str, str] = {}
    for row in iter_rows(path, component=COMPONENT):
        ident = _require(row, "id", component=COMPONENT)
        if ident is None or isinstance(ident, (bool, list, dict)):
            raise row.error(f"is {ident!r}, expected the instance's id (integer or text).",
                            component=COMPONENT, field="id",
                            fix="copy the id of the RGB instance.")
        key = str(ident)
        if key in out:
            raise row.error(f"duplicate prediction for id {key!r} (first at {places[key]}).",
                            component=COMPONENT, field="id", fix="keep one row per id.")
        raw = _require(row, "prediction", component=COMPONENT)
        places[key] = f"{row.unit} {row.number}"
        if raw is None:
            out[key] = Prediction(None, "null_prediction", f"prediction is null at {places[key]}")
        else:
            out[key] = Prediction(as_text(row, "prediction", raw, component=COMPONENT))
    return out


def score_predictions(dataset: RgbDataset, predictions: Mapping[str, Prediction],
                      config: BuildConfig, *, mode: str = "strict",
                      signature: str | None = None) -> RgbScore:
    """Label every instance's prediction and compute evalue.py's rates.

    In ``lenient`` mode the strict (paper) numbers are still the headline; the lenient ones
    are added under ``lenient`` with the number of items whose correctness flips.
    """
    from ragmeter.runs._schema import Coverage, ItemResult

    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r}.", component=COMPONENT,
                         fix="use --mode strict, lenient or refactor.")
    zh = "zh" in dataset.lang
    items: list[dict[str, Any]] = []
    results: list[ItemResult] = []
    labels_ok: list[tuple[int, ...]] = []
    facts_ok: list[int] = []
    len_labels: list[tuple[int, ...]] = []
    len_facts: list[int] = []
    flips = {"wrong_to_right": 0, "right_to_wrong": 0}
    refactor = RefactorTally(dataset.kind, config.noise_rate) if mode == "refactor" else None
    for inst in dataset.instances:
        pred = predictions.get(inst.key)
        if pred is None:
            pred = Prediction(None, "missing_prediction", f"no prediction for id {inst.key!r}")
        if pred.text is None:
            res = ItemResult.unscored(inst.key, pred.reason or "unscored", pred.detail)
            results.append(res)
            items.append({"id": inst.id, "status": "unscored", "reason": res.reason,
                          "detail": res.detail})
            continue
        lab = qa_rgb.label_prediction(pred.text, inst.answer, remove_spaces=zh)
        correct = qa_rgb.is_correct(lab.labels, config.noise_rate)
        labels_ok.append(lab.labels)
        facts_ok.append(lab.factlabel)
        item: dict[str, Any] = {"id": inst.id, "status": "ok", "labels": list(lab.labels),
                                "factlabel": lab.factlabel, "correct": int(correct),
                                "prediction": lab.prediction}
        if mode == "lenient":
            le = qa_rgb.lenient_labels(pred.text, inst.answer, remove_spaces=zh)
            le_correct = qa_rgb.is_correct(le.labels, config.noise_rate)
            len_labels.append(le.labels)
            len_facts.append(le.factlabel)
            item["lenient"] = {"labels": list(le.labels), "factlabel": le.factlabel,
                               "correct": int(le_correct)}
            if le_correct and not correct:
                flips["wrong_to_right"] += 1
            elif correct and not le_correct:
                flips["right_to_wrong"] += 1
        if refactor is not None:
            item["refactor"] = refactor.add(pred.text, inst, lab, correct)
        items.append(item)
        results.append(ItemResult(id=inst.key, values={"correct": int(correct)}))
    metrics = _rates(dataset.kind, labels_ok, facts_ok, config.noise_rate)
    lenient = None
    if mode == "lenient":
        lenient = {"comparable_with_paper": False, **_rates(dataset.kind, len_labels,
                                                            len_facts, config.noise_rate),
                   "flips": flips}
    extra = sorted(set(predictions) - {i.key for i in dataset.instances})
    notes = []
    if extra:
        notes.append(f"{len(extra)} prediction id(s) match no instance of {dataset.name} and "
                     f"were ignored, e.g. {', '.join(extra[:5])}.")
    return RgbScore(
        dataset=dataset.name, kind=dataset.kind, lang=dataset.lang, config=config, mode=mode,
        metrics=metrics, coverage=Coverage.of(results),
        signature=signature or signature_for(dataset, config, mode=mode), items=items,
        lenient=lenient, refactor=refactor.summary() if refactor is not None else None,
        notes=notes)


def _rates(kind: str, labels: list[tuple[int, ...]], facts: list[int],
           noise_rate: float) -> dict[str, Any]:
    acc, tt = qa_rgb.accuracy(labels, noise_rate)
    out: dict[str, Any] = {"accuracy": acc, "tt": tt, "n": len(labels)}
    if kind == "fact":
        fr = qa_rgb.fact_rates(labels, facts)
        out.update({"fact_check_rate": fr.fact_check_rate, "correct_rate": fr.correct_rate,
                    "fact_tt": fr.fact_tt, "correct_tt": fr.correct_tt})
    return out
