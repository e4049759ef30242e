"""``ragmeter.multilingual.fit``: ragmeter's semantic score fitted on answers that carry a
reference semantic score, measured held out; ``ragmeter multilingual fit`` calls it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter._verb._context import field_map, input_record

if TYPE_CHECKING:  # the summary's modules load after the first call (issue 26.5)
    from ragmeter.result import Result

__all__ = ["fit"]

COMPONENT = "multilingual"


def fit(data: Any, *, out: str | Path | None = None, name: str = "semantic-fitted-v1",
        reference_field: str = "semantic_score", source: str | None = None,
        fields: Mapping[str, str] | Iterable[str] | None = None) -> Result:
    """Fit ragmeter's semantic score on answers that carry a reference 0-1 semantic score
    (LBRAG's answers with their released ``semantic_score``, or ``reference_field``), choose
    its features, penalty and output rule on those rows only, and measure it held out by
    language and by system beside token F1 alone (:mod:`ragmeter.multilingual._semantic_fit`).

    The summary is the model file's content; ``out`` also writes it (byte-identical for the
    same rows and arguments).  ``source``: a line saying what the data is (kept in the
    file's provenance).  Rows without an answer or a reference are left out and counted.
    Use the file with ``judge(..., model_file=PATH)`` (``--model-file``).
    """
    from ragmeter.errors import InputError
    from ragmeter.io import as_text, is_blank, iter_rows, require, source_label, write_text
    from ragmeter.multilingual._metrics import METRIC_VERSION, fit_headline
    from ragmeter.multilingual._reference import reference_scores
    from ragmeter.multilingual._semantic_fit import Fitting, fit_content
    from ragmeter.multilingual._semantic_model import fingerprint, model_json
    from ragmeter.signature import Signature
    from ragmeter.text._languages import canonical_language

    fm = field_map(fields, COMPONENT)
    rows = list(iter_rows(data, component=COMPONENT, field_map=fm))
    refs = reference_scores(rows, reference_field)
    usable = []
    for row, ref in zip(rows, refs, strict=True):
        pred = require(row, "pred_answer", component=COMPONENT, field_map=fm)
        if ref is None or is_blank(pred):
            continue
        usable.append({
            "gold_answer": as_text(row, "gold_answer", require(
                row, "gold_answer", component=COMPONENT, field_map=fm), component=COMPONENT),
            "pred_answer": as_text(row, "pred_answer", pred, component=COMPONENT),
            "sample_lang": canonical_language(as_text(row, "sample_lang", require(
                row, "sample_lang", component=COMPONENT, field_map=fm), component=COMPONENT)),
            "system": as_text(row, "system", require(row, "system", component=COMPONENT,
                                                     field_map=fm), component=COMPONENT),
            "reference": ref})
    if len({r["sample_lang"] for r in usable}) < 2:
        raise InputError(f"{len(usable)} rows with an answer and a reference score in "
                         f"{reference_field!r}, in fewer than two languages; the fit chooses "
                         "its settings by leaving one language out.", component=COMPONENT,
                         path=source_label(data),
                         fix="fit on answers in two or more languages that carry reference "
                             "scores (reference_field=..., --reference-field).")
    record = input_record(data, len(rows))
    run_ids = {str(r.data.get("run_id")) for r in rows if not is_blank(r.data.get("run_id"))}
    provenance: dict[str, Any] = {
        "file": Path(record.path).name, "sha256": record.sha256, "rows": len(rows),
        "fitted_rows": len(usable), "reference_field": reference_field,
        "rows_used": "every row with an answer and a reference score (none left out by "
                     "hand); languages and systems as the rows name them",
        "name": source or (f"run {next(iter(run_ids))}" if len(run_ids) == 1
                           else Path(record.path).name)}
    if len(run_ids) == 1:
        provenance["run_id"] = next(iter(run_ids))
    content = fit_content(Fitting.of(usable), name=name, data_provenance=provenance)
    if out is not None:
        write_text(out, model_json(content))
    summary: dict[str, Any] = {
        **content, "family": COMPONENT, "verb": "fit",
        "coverage": {"rows": len(rows), "scored": len(usable),
                     "unscored": len(rows) - len(usable), "reasons": {}}}
    summary["signature"] = Signature.make(COMPONENT, METRIC_VERSION, {
        "features": content["features"], "judge": f"ragmeter:{name}@fitted:{content['version']}:{fingerprint(content)}",
        "held_out": ",".join(f"leave-one-{k}-out" for k in content["provenance"]["held_out"])
    }).render()
    items = [{"held_out": k, **{f"{who}_{stat}": v[who][stat]["value"]
                                for who in ("judge", "f1") for stat in v[who]}}
             for k, v in content["provenance"]["held_out"].items()]
    from ragmeter.result import Result  # loaded on use (issue 26.5)

    return Result(COMPONENT, "fit", summary, items=items, inputs=[record],
                  headline=fit_headline(summary))
