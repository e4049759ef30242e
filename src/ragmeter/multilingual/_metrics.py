"""The multilingual family's metrics, defined once: the pure per-row functions, the ``METRICS``
table that every door iterates over, and the headline of each verb's result.

LBRAG's numbers (kanoes/LBRAG-NEW, ``lbrag/metrics.py`` and ``experiments/scripts/
experiment.py``): EM, language-aware F1, RLC and RLC_OK recomputed from the answers, the
translation cost, CNBE against a baseline system and the judge's semantic score.  Beyond LBRAG:
the language-identification RLC (``--rlc-lid``).

Each row of the table is a :class:`RowMetric`: a :class:`~ragmeter.stats.Metric` that also says
where its per-row value comes from (``row``), so the row, Arrow and Ray paths, the aggregation,
the items, the console, the HTML report and the run list need no code of their own per metric:

* ``answer``: ``fn(normalized prediction, normalized gold, language)``; with several golds the
  row's value is the max over them (SQuAD's rule) (``batch``: the same over whole columns,
  given which rows' answers are identical);
* ``response``: ``fn(prediction, language)`` (``batch``: the same over whole columns);
* ``of:<metric>``: ``fn(value of that metric in the same row)``;
* ``given``: read from the input row (``translate_tokens``/``evidence``, ``semantic_score``);
* ``baseline``: paired with the baseline system's row of the same sample (CNBE);
* ``lid``: the opt-in language-identification RLC (a fitted model, ``--rlc-lid``).

Pure: no I/O, no model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragmeter.multilingual._cost import cnbe
from ragmeter.stats._metric import ALL_GROUP, Headline, Metric, MetricTable
from ragmeter.text._languages import CHAR_TOKEN_LANGUAGES
from ragmeter.text._overlap import f1_from_normalized, f1_from_tokens, f1_many
from ragmeter.text._rlc import RLC_OK_THRESHOLD, rlc, rlc_batch, rlc_ok, rlc_ok_many

__all__ = ["METRIC_VERSION", "METRICS", "AGREEMENT_METRICS", "METRIC_KEYS", "PAIRED_METRICS", "RowMetric",
           "ROWS", "contains", "exact_match_normalized", "f1_normalized", "rows_of", "signature_fields",
           "headline", "judge_headline", "judge_signature", "degenerate_flag", "fit_headline"]

METRIC_VERSION = "lbrag-1"


@dataclass(frozen=True)
class RowMetric(Metric):
    """A metric of this family and where its per-row value comes from (module docstring).

    ``lbrag``: a key of LBRAG's ``metrics.json`` (reproduced exactly by the golden test);
    ``compact``: also a column of the per-group table (``--by``); ``batch``: the function
    over whole columns (same values, tested): ``answer`` and ``response`` rows take their
    columns of texts, ``of:`` rows a float64 array of the other metric's values."""

    row: str = "answer"
    lbrag: bool = True
    compact: bool = True
    batch: Callable[..., Any] | None = field(default=None, compare=False, repr=False)

    @property
    def of(self) -> str | None:
        """The metric an ``of:<metric>`` row is computed from."""
        return self.row[3:] if self.row.startswith("of:") else None


def exact_match_normalized(pred_norm: str, gold_norm: str, lang: str) -> float:
    """1.0 when the normalized prediction equals the normalized gold answer, else 0.0
    (LBRAG's ``exact_match`` after ``normalize_text``; ``lang`` is not used)."""
    return 1.0 if pred_norm == gold_norm else 0.0


def f1_normalized(pred_norm: str, gold_norm: str, lang: str) -> float:
    """LBRAG's language-aware token F1 of two normalized answers
    (:func:`ragmeter.text._overlap.f1_from_normalized`), with two exact shortcuts: identical
    answers score 1.0 (both empty too), disjoint whitespace tokens 0.0 without counting."""
    if pred_norm == gold_norm:
        return 1.0  # identical non-empty token lists give p = r = 1; both empty give 1.0
    if not pred_norm or not gold_norm:
        return 0.0
    if lang in CHAR_TOKEN_LANGUAGES:
        return f1_from_normalized(pred_norm, gold_norm, lang)
    pt, gt = pred_norm.split(), gold_norm.split()
    if set(pt).isdisjoint(gt):
        return 0.0
    return f1_from_tokens(pt, gt)


def contains(pred_norm: str, gold_norm: str, lang: str) -> float:
    """1.0 when the normalized gold answer occurs in the normalized prediction, else 0.0.

    ragmeter's own lenient match, not one of LBRAG's metrics: it credits a right answer said
    at more length ("It is Paris." for "Paris") that EM misses.  Language-aware like F1: for
    ja and zh (characters are the tokens) the gold's characters must appear in a row in the
    prediction's, spaces ignored; otherwise the gold's words must appear in a row among the
    prediction's, so "art" is not in "party".  An empty gold is contained only in an empty
    prediction (EM's and F1's rule for two empty answers).  Answers are normalized (single
    spaces, no leading or trailing one), as the scorer passes them.
    """
    if not gold_norm:
        return 1.0 if not pred_norm else 0.0
    if lang in CHAR_TOKEN_LANGUAGES:
        return 1.0 if gold_norm.replace(" ", "") in pred_norm.replace(" ", "") else 0.0
    return 1.0 if f" {gold_norm} " in f" {pred_norm} " else 0.0


def _identical_first(fn: Callable[[str, str, str], float]) -> Callable[..., list[float]]:
    """``fn`` over whole columns, 1.0 without a call where the normalized answers are
    identical (EM, F1 and contains all give 1.0 there; tested equal to ``fn`` per row)."""
    def batch(preds: Sequence[str], golds: Sequence[str], langs: Sequence[str],
              same: Sequence[bool]) -> list[float]:
        return [1.0 if s else fn(p, g, lg)
                for s, p, g, lg in zip(same, preds, golds, langs, strict=True)]
    return batch


def _f1_batch(preds: Sequence[str], golds: Sequence[str], langs: Sequence[str],
              same: Sequence[bool]) -> Any:
    """:func:`f1_normalized` over whole columns, as a float64 numpy array: 1.0 where the
    answers are identical, :func:`~ragmeter.text._overlap.f1_many` (the same token F1, in
    numpy) elsewhere."""
    import numpy as np

    n = len(preds)
    differ = ~np.fromiter(same, dtype=bool, count=n)
    char = np.fromiter(map(CHAR_TOKEN_LANGUAGES.__contains__, langs), dtype=bool, count=n)
    out = f1_many(preds, golds, char, differ)
    out[~differ] = 1.0
    return out


def _em_batch(preds: Sequence[str], golds: Sequence[str], langs: Sequence[str],
              same: Sequence[bool]) -> list[float]:
    """:func:`exact_match_normalized` over whole columns."""
    return [1.0 if s else 0.0 for s in same]


# ------------------------------------------------------------------ the table

_LBRAG = "LBRAG (kanoes/LBRAG-NEW), lbrag/metrics.py"
_LBRAG_EXP = "LBRAG (kanoes/LBRAG-NEW), experiments/scripts/experiment.py"
_VALIDATION = ("ragmeter: the judge against reference semantic scores (LBRAG's released "
               "GPT-4o-mini semantic_score, or --reference-field); 95% CI: percentile "
               "bootstrap over rows")

_AGREEMENT: list[Metric] = [
    Metric("semantic_auroc", "semantic AUROC",
           "the judge's semantic score ranking the answers whose reference semantic score is "
           "at least 0.5 above the others (multilingual judge on data with reference scores; "
           "ties count 1/2)", _VALIDATION, aggregation="auroc",
           constants={"threshold": 0.5}),
    Metric("semantic_spearman", "semantic Spearman",
           "Spearman's rho of the judge's semantic scores and the reference scores",
           _VALIDATION, aggregation="spearman"),
    Metric("semantic_mae", "semantic MAE",
           "mean absolute difference of the judge's semantic scores and the reference "
           "scores", _VALIDATION, higher_is_better=False, aggregation="mae"),
]

METRICS = MetricTable("multilingual", METRIC_VERSION, [
    RowMetric("em", "EM",
              "1.0 when the normalized prediction equals the normalized gold answer (the max "
              "over several golds)", f"{_LBRAG} exact_match; several golds: SQuAD v1.1",
              fn=exact_match_normalized, batch=_em_batch),
    RowMetric("f1", "F1",
              "token F1 of the normalized prediction and gold (characters are the tokens for "
              "ja and zh); the max over several golds",
              f"{_LBRAG} f1_score; several golds: SQuAD v1.1", fn=f1_normalized,
              batch=_f1_batch,
              constants={"char_token_languages": tuple(sorted(CHAR_TOKEN_LANGUAGES))}),
    RowMetric("contains", "contains",
              "1.0 when the normalized gold answer occurs in the normalized prediction (whole "
              "words; characters for ja and zh); the max over several golds",
              "ragmeter (its own lenient match; not an LBRAG metric)", fn=contains,
              batch=_identical_first(contains),
              lbrag=False),
    RowMetric("rlc", "RLC",
              "response-language consistency: share of the prediction's characters (spaces, "
              "digits and punctuation skipped) in the expected language's script; 1.0 when "
              "none is left",
              f"{_LBRAG} (response language consistency)", fn=rlc, row="response",
              batch=rlc_batch, compact=False),
    RowMetric("rlc_ok", "RLC_OK",
              f"1.0 when RLC is at least {RLC_OK_THRESHOLD}, else 0.0", _LBRAG, fn=rlc_ok,
              row="of:rlc", batch=rlc_ok_many, constants={"threshold": RLC_OK_THRESHOLD}),
    RowMetric("cost", "cost",
              "tokens translated for the answer: translate_tokens, else the sum of the "
              "evidence's metadata.token_count", _LBRAG_EXP, higher_is_better=False,
              row="given", digits=2),
    RowMetric("cnbe", "CNBE",
              "cost-normalized bridging efficiency: (F1 - the baseline system's F1 on the "
              "same sample) / cost; 0.0 when the cost is 0", f"{_LBRAG_EXP}; memo2", fn=cnbe,
              row="baseline", digits=6, compact=False),
    RowMetric("semantic_score", "semantic",
              "0-1 agreement in meaning of the answer with the gold answer, by a judge model "
              "(multilingual judge, or the input's semantic_score)",
              "LBRAG semantic judge (experiments/scripts/experiment.py)", row="given",
              judged=True),
    RowMetric("rlc_lid", "RLC (LID)",
              "language-identification RLC: lingua's confidence that the prediction is in the "
              "expected language (among the data's languages); catches a wrong language in "
              "the same script",
              "ragmeter (--rlc-lid), beyond LBRAG", row="lid", lbrag=False, compact=False),
    *_AGREEMENT,
])
"""Every metric of the family: the per-row metrics (:data:`ROWS`), then the judge's agreement
with reference semantic scores (corpus-level, :data:`AGREEMENT_METRICS`), so every door that
reads a headline (notebook, gate, report, web app) finds each by its name."""

AGREEMENT_METRICS = MetricTable("multilingual", METRIC_VERSION, _AGREEMENT)
"""The semantic judge's agreement with reference semantic scores (``multilingual judge`` on
data that has them; ``multilingual fit``'s held-out numbers): corpus-level statistics, not
per-row metrics: the tail of ``METRICS``, and a table of their own for the verbs that
show only them."""

ROWS: tuple[RowMetric, ...] = tuple(m for m in METRICS if isinstance(m, RowMetric))
"""``METRICS`` typed as this family's rows."""

METRIC_KEYS = tuple(m.name for m in ROWS if m.lbrag)
"""The keys of LBRAG's ``metrics.json`` (each with ``_std``), in its order."""

PAIRED_METRICS = ("f1", "em")
"""LBRAG's paired comparison unit: ``--paired`` tests and the comparison of runs pair on these
per-row values, in this order."""
assert all(name in METRICS for name in PAIRED_METRICS)


def rows_of(kind: str) -> tuple[RowMetric, ...]:
    """The metrics whose per-row value comes from ``kind`` (``answer``, ``response``...)."""
    return tuple(m for m in ROWS if m.row == kind)


def signature_fields(table: MetricTable | None = None) -> dict[str, str]:
    """The signature's metric settings, taken from the table's constants (``METRICS`` when
    None): the languages F1 tokenizes by character and the RLC_OK threshold.  They keep the
    signature strings of earlier releases (``f1:char:ja,zh,zh_cn,zh_tw``,
    ``rlc:script>=0.6``), and a changed constant changes them."""
    table = METRICS if table is None else table
    langs = table.get("f1").constants["char_token_languages"]
    return {"f1": "char:" + ",".join(langs),
            "rlc": f"script>={table.get('rlc_ok').constants['threshold']}"}


def judge_signature(backend: str, model: str, scoring: str, prompt_version: str,
                    repeats: int = 1, bootstrap: tuple[int, int] = (1000, 12345)) -> str:
    """The signature of ``multilingual judge``'s semantic scores: the judge (backend, model),
    its scoring method, the prompt version, beyond one the repeats averaged, and the
    bootstrap (resamples, seed) of the 95% CI its mean always carries."""
    from ragmeter.signature import Signature  # made after a judged run's calls (issue 26.5)

    settings = {"backend": backend, "judge": model, "scoring": scoring,
                "prompt": prompt_version, "repeats": repeats if repeats > 1 else None,
                "bootstrap": f"{bootstrap[0]}@seed{bootstrap[1]}"}
    return Signature.make("multilingual", METRIC_VERSION, settings).render()


# ------------------------------------------------------------------ headlines


def headline(summary: Mapping[str, Any],
             rows_by_system: Mapping[str, int] | None = None) -> list[Headline]:
    """The headline of a multilingual result's summary (``judge``'s: :func:`judge_headline`).

    ``score``: every metric of every system (the group), with its bootstrap 95% CI when
    computed, n (the rows the value covers) and coverage (n / the system's rows).
    ``rows_by_system``: each system's rows, unscored ones included (default: read from the
    summary, exact when every row was scored or there is one system).  Metrics without a
    value (no cost, no baseline) are left out."""
    if summary.get("verb") == "judge":
        return judge_headline(summary)
    if summary.get("verb") == "fit":
        return fit_headline(summary)
    metrics: Mapping[str, Mapping[str, Any]] = summary.get("metrics") or {}
    cis: Mapping[str, Mapping[str, Any]] = summary.get("ci95") or {}
    cov = summary.get("coverage") or {}
    values: dict[str, dict[str, Any]] = {}
    counts: dict[str, dict[str, Any]] = {}
    for system, m in metrics.items():
        if not isinstance(m, Mapping):
            continue
        values[system] = {k: m[k] for k in METRICS.names if m.get(k) is not None}
        counts[system] = {k: m.get(f"{k}_n", m.get("n")) for k in values[system]}
    rows = METRICS.headline(values, ci=cis, n=counts)
    return [replace(h, coverage=_share(h.n, _system_rows(h.group, metrics, cov,
                                                         rows_by_system))) for h in rows]


def _system_rows(system: str, metrics: Mapping[str, Mapping[str, Any]],
                 cov: Mapping[str, Any], given: Mapping[str, int] | None) -> int | None:
    if given is not None and system in given:
        return given[system]
    n = metrics[system].get("n")
    if not cov.get("unscored"):
        return n if isinstance(n, int) else None
    return cov.get("rows") if len(metrics) == 1 else None


def _share(part: Any, whole: Any) -> float | None:
    ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (part, whole))
    return part / whole if ok and whole else None


def judge_headline(summary: Mapping[str, Any]) -> list[Headline]:
    """The headline of ``multilingual judge``: the mean semantic score over every row (group
    ``all``) and, with ``--by``, over each group, with the bootstrap 95% CI, n and coverage;
    on data with reference scores, then the judge's agreement with them (group: the judge's
    name; ``"<judge> / <value>"`` per ``--by`` group).  A judge that tripped the
    degenerate-judge alarm, or whose validation is at or below chance, flags every semantic
    score row (the agreement rows are measurements of the judge, and stay unflagged)."""
    blocks = {ALL_GROUP: summary}
    groups = summary.get("groups")
    if isinstance(groups, Mapping):
        for key, block in (groups.get("values") or {}).items():
            blocks.setdefault(str(key), block)  # a group named "all" cannot hide the total
    values, cis, n, coverage = {}, {}, {}, {}
    for group, block in blocks.items():
        m = block.get("metrics") or {}
        values[group] = {"semantic_score": m.get("semantic_score")}
        cis[group] = block.get("ci95") or {}
        n[group] = m.get("n")
        c = block.get("coverage") or {}
        coverage[group] = _share(c.get("scored"), c.get("rows"))
    flag = degenerate_flag(summary.get("alarms") or [])
    rows = METRICS.headline(values, ci=cis, n=n, coverage=coverage,
                            flags={"semantic_score": flag} if flag else None)
    return rows + _agreement_rows(summary)


_AGREEMENT_NAMES = tuple(AGREEMENT_METRICS.names)


def _agreement_rows(summary: Mapping[str, Any]) -> list[Headline]:
    """The judge's agreement with the reference scores, overall and per ``--by`` group."""
    judges = summary.get("judges")
    if not isinstance(judges, Mapping):
        return []
    values: dict[str, dict[str, Any]] = {}
    cis: dict[str, dict[str, Any]] = {}
    n: dict[str, dict[str, Any]] = {}
    coverage: dict[str, Any] = {}
    reference = summary.get("reference") or {}
    for judge, ests in judges.items():
        blocks = [(str(judge), ests, reference.get("rows"))]
        groups = summary.get("groups")
        for key, block in ((groups or {}).get("values") or {}).items() \
                if isinstance(groups, Mapping) else ():
            if isinstance(block.get("agreement"), Mapping):
                blocks.append((f"{judge} / {key}", block["agreement"], None))
        for group, found, rows in blocks:
            if not isinstance(found, Mapping):
                continue
            values[group] = {k: (found.get(k) or {}).get("value") for k in _AGREEMENT_NAMES}
            cis[group] = {k: (found.get(k) or {}).get("ci95") for k in _AGREEMENT_NAMES}
            n[group] = {k: (found.get(k) or {}).get("n") for k in _AGREEMENT_NAMES}
            coverage[group] = _share((found.get("semantic_auroc") or {}).get("n"), rows)
    return AGREEMENT_METRICS.headline(values, ci=cis, n=n, coverage=coverage)


def fit_headline(summary: Mapping[str, Any]) -> list[Headline]:
    """``multilingual fit``: the fitted judge's held-out agreement per scheme (group
    ``judge / leave-one-language-out`` ...) beside token F1 alone's (``F1 / ...``), with
    their bootstrap CIs."""
    held = (summary.get("provenance") or {}).get("held_out") or {}
    values: dict[str, dict[str, Any]] = {}
    cis: dict[str, dict[str, Any]] = {}
    n: dict[str, dict[str, Any]] = {}
    for scheme, found in held.items():
        for who, label in (("judge", "fitted judge"), ("f1", "F1 alone")):
            ests = found.get(who) or {}
            group = f"{label} / leave-one-{scheme}-out"
            values[group] = {f"semantic_{k}": (ests.get(k) or {}).get("value")
                             for k in ("auroc", "spearman", "mae")}
            cis[group] = {f"semantic_{k}": (ests.get(k) or {}).get("ci95")
                          for k in ("auroc", "spearman", "mae")}
            n[group] = {f"semantic_{k}": (ests.get(k) or {}).get("n")
                        for k in ("auroc", "spearman", "mae")}
    return AGREEMENT_METRICS.headline(values, ci=cis, n=n)


def degenerate_flag(alarms: Sequence[Any]) -> str | None:
    """The headline flag of a judge that tripped the degenerate-judge alarm or the validity
    alarm (:data:`ragmeter.judges.ALARM_KINDS`), else None."""
    from ragmeter.judges._card import ALARM_KINDS, alarm_flag

    found = [alarm_flag(a) for a in alarms
             if isinstance(a, Mapping) and a.get("kind") in ALARM_KINDS]
    return "; ".join(found) if found else None
