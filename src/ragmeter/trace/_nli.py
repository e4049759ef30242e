"""``trace label --strategy nli``: a local NLI model judges every response sentence.

Opt-in (``pip install 'ragmeter[nli]'``), for users who have a sequence-classification NLI
or hallucination model on disk (:class:`ragmeter.backends._nli.NliModel`).  Each response
sentence is the hypothesis; its premise is the ``evidence_sentences`` document sentences
sharing most words with it (:func:`~ragmeter.trace._label.select_evidence`; 0: every
document sentence, cut to the model's length).  All pairs of all rows go to the model in
batches.  The sentence is supported when p(supported) reaches ``threshold``; the row's
columns are the choice strategy's support columns.  An NLI model judges support only:
relevance and utilization stay empty (None), so ``trace run`` validates adherence.

The judge is ``nli:<model>@<fingerprint>``, unvalidated until ``trace run`` measures it on
annotated rows (no agreement is claimed for a model ragmeter has not seen).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragmeter.trace._data import SourceRow
from ragmeter.trace._label import (
    LabelConfig,
    Prepared,
    base_row,
    considered_sentences,
    prepare,
    select_evidence,
    support_columns,
    unscored_row,
)

__all__ = ["nli_pairs", "nli_rows", "nli_version", "load_nli"]


def nli_version(config: LabelConfig) -> str:
    """The prompt version of NLI labels: how the premise was built."""
    return f"nli:evidence={config.evidence_sentences}"


def load_nli(config: LabelConfig, batch_size: int = 16) -> Any:
    """The NLI model ``config.nli_model`` names (loaded from disk only)."""
    from ragmeter.backends._nli import NliModel
    from ragmeter.trace._data import COMPONENT

    return NliModel(str(config.nli_model), batch_size=batch_size, component=COMPONENT)


def nli_pairs(p: Prepared, config: LabelConfig) -> list[tuple[str, str]]:
    """(premise, hypothesis) of each response sentence of a row, in order."""
    considered = considered_sentences(p, config)
    return [(" ".join(s for _, s in select_evidence(sent, considered,
                                                     config.evidence_sentences)), sent)
            for _, sent in p.response_sentences]


def nli_rows(sources: Sequence[SourceRow], config: LabelConfig,
             model: Any) -> list[dict[str, Any]]:
    """Label every row's support with ``model`` (an object with ``identity`` and
    ``support(pairs) -> list[float]``); every pair of every row in one batched pass."""
    prepared = [prepare(s, config) for s in sources]
    pairs: list[tuple[str, str]] = []
    spans: list[tuple[int, int]] = []
    for p in prepared:
        start = len(pairs)
        if p.source.unscored is None:
            pairs.extend(nli_pairs(p, config))
        spans.append((start, len(pairs)))
    probs = model.support(pairs) if pairs else []
    judge = f"nli:{model.identity}"
    out = []
    for p, (a, b) in zip(prepared, spans, strict=True):
        base = base_row(p, config, judge, prompt_version=nli_version(config))
        if p.source.unscored is not None:
            out.append(unscored_row(base, *p.source.unscored))
            continue
        support = {key: round(float(v), 4)
                   for (key, _), v in zip(p.response_sentences, probs[a:b], strict=True)}
        out.append({**base, "status": "ok", "threshold": config.threshold,
                    "all_relevant_sentence_keys": None, "all_utilized_sentence_keys": None,
                    **support_columns(p, config, support, "p(supported)")})
    return out
