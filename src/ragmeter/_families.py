"""The table of families: the one place that names them, so that every door (console, HTML
report, web app, gates) finds a family's metrics, report section and launch forms without
importing any family it does not show.

Each entry is plain data; a family's parts are found by convention inside its package
(``ragmeter/<family>/``):

* ``_metrics.METRICS``: its :class:`~ragmeter.stats.MetricTable`;
* ``_report.section(doc) -> Markup``: its HTML report section, read from a stored result, and
  ``_report.PAIRED_UNITS`` (optional): the per-item values a comparison of runs pairs on;
* ``_form.FORMS``: the web app's launch forms of its verbs (optional).

A new family is a new package of the same shape plus one row here (docs/contributing.md).
Lookups import lazily, by name: ``import ragmeter`` stays light, and the layers below the
families (reports) never import a family module at import time.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

__all__ = ["Family", "FAMILIES", "family", "family_part"]


@dataclass(frozen=True)
class Family:
    """A family of measurements: its name (the CLI group and ``ragmeter.<name>``), a title for
    headings, the work it reproduces, and its main metric (the run list's headline)."""

    name: str
    title: str
    source: str
    main_metric: str

    @property
    def package(self) -> str:
        return f"ragmeter.{self.name}"


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("rgb", "RGB robustness", "Chen et al., AAAI 2024", "accuracy"),
    Family("trace", "TRACe", "RAGBench, Friel et al. 2024", "adherence"),
    Family("multilingual", "Multilingual QA", "LBRAG", "f1"),
    Family("rubric", "Rubric judging", "RAGaliq", "weighted_score"),
    Family("reliability", "Annotator reliability", "QC key for win/tie/loss evaluation",
           "reliability"),
    Family("retrieval", "Retrieval", "trec_eval (NIST), exact", "ndcg@10"),
    Family("criteria", "Criteria judging", "your own criteria (G-Eval-style scoring)",
           "criterion_normalized"),
    Family("app", "Your RAG application", "ragmeter app run", "answered"),
)}


def family(name: str) -> Family | None:
    """The family called ``name`` (None for a name ragmeter does not know, e.g. an old record)."""
    return FAMILIES.get(name)


def family_part(name: str, module: str, attr: str) -> Any:
    """``ragmeter.<name>.<module>.<attr>`` (e.g. ``("rgb", "_metrics", "METRICS")``), or None
    when the family, the module or the attribute does not exist."""
    if name not in FAMILIES:
        return None
    target = f"{FAMILIES[name].package}.{module}"
    try:
        mod = importlib.import_module(target)
    except ModuleNotFoundError as err:
        if err.name != target:  # the part exists but needs something missing: say so
            raise
        return None
    return getattr(mod, attr, None)
