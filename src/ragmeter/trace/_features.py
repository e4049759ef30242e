"""Lexical features of the TRACe detector (pure; numpy only).

Words are lowercased ``\\w+`` runs with a short English stop-word list removed; a run of Han,
Hiragana or Katakana characters (Chinese and Japanese write no spaces) becomes its character
bigrams (a single character stays a unigram), so overlap works without a word segmenter.
Numbers are digit runs (``3,500`` and ``3.5`` kept whole).  "Names" are capitalized words that
do not start their sentence (a cheap entity proxy; scripts without case have none).

Three feature vectors:

- :func:`support_features`, one per response sentence, for "is this sentence unsupported by
  the documents?": coverage of its words by the best document sentence and by the best two,
  share of its words, numbers and names found in no document, bigram coverage, length,
  position, overlap with the question.
- :func:`row_features`, one per row, for "does the row hold an unsupported claim?" (the
  row's probability of not being adherent): share of the response's words in no document,
  mean best-sentence coverage of its sentences, share of its bigrams found in the documents,
  best coverage of its words by a single document, share of the question's words in no
  document (documents that do not cover the question invite invented answers), the number
  of document sentences.  Unsupported claims are rare and spread over sentences, so one
  row-level model ranks rows better than an aggregate of sentence probabilities (measured:
  docs/trace.md).
- :func:`document_features`, one per document sentence, for "is it relevant to the question?"
  and "did the response use it?": overlap with the question and with the response (whole and
  best sentence), shared numbers, position, length and the row's sentence count, and
  whether a greedy cover of the response's words (:func:`greedy_cover`) picks it (v3).

The feature names are stored in the detector file, so a file fitted on other features is
refused rather than misread.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["SUPPORT_FEATURES", "DOCUMENT_FEATURES", "ROW_FEATURES", "FEATURE_VERSION", "words",
           "RowText", "row_text", "support_features", "document_features", "row_features",
           "greedy_cover"]

FEATURE_VERSION = "lexical-3"

_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|\w+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CAPITAL = re.compile(r"(?<=[^\s])\s+([A-Z][\w'-]*)")
_REFUSAL = re.compile(r"\b(?:not (?:provide|mention|contain|specif|includ|stat|clear)|"
                      r"no (?:information|mention|specific)|does not say|unclear|"
                      r"cannot (?:be )?(?:determin|answer|find))", re.IGNORECASE)
STOP_WORDS = frozenset("""a an the and or but if then than that this these those there here of
to in on at by for with from as into onto about over under between through during before after
is are was were be been being am do does did done have has had having it its it's they them
their he him his she her we us our you your i me my which who whom whose what when where why
how not no nor so too very can could should would may might must will shall also just only
such any all each both more most other some own same s t""".split())

SUPPORT_FEATURES = (
    "best_cover", "top2_cover", "novel_words", "novel_numbers", "has_numbers", "novel_names",
    "bigram_cover", "best_bigram_cover", "log_words", "position", "is_last", "log_sentences",
    "question_cover", "refusal", "best_jaccard",
)
ROW_FEATURES = (
    "novel_share", "mean_best_cover", "response_bigram_share", "best_doc_cover",
    "question_novel", "log_doc_sentences",
)
DOCUMENT_FEATURES = (
    "question_cover", "question_share", "response_share", "best_response_share",
    "response_bigram_share", "shared_numbers", "position", "is_first", "log_words",
    "log_row_sentences", "best_in_doc_question", "response_cover_rank", "covers_response",
    "best_for_response", "greedy_cover", "greedy_cover_new",
)


def words(text: str) -> list[str]:
    """Content tokens of ``text`` (see module docstring), in order, with repeats."""
    out: list[str] = []
    for tok in _TOKEN.findall(text.lower()):
        if tok[0] >= "\u3040" and _CJK.match(tok):
            if len(tok) == 1:
                out.append(tok)
            else:
                out.extend(tok[i:i + 2] for i in range(len(tok) - 1))
        elif tok not in STOP_WORDS and (len(tok) > 1 or tok.isdigit()):
            out.append(tok)
    return out


def _bigrams(toks: Sequence[str]) -> set[tuple[str, str]]:
    return set(zip(toks, toks[1:], strict=False))


def _names(text: str) -> set[str]:
    return {m.lower() for m in _CAPITAL.findall(text)}


@dataclass(frozen=True)
class _Sent:
    key: str
    words: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    numbers: frozenset[str]
    n_words: int


@functools.lru_cache(maxsize=1 << 16)
def _tokenized(text: str) -> tuple[tuple[str, ...], frozenset[str], frozenset[tuple[str, str]],
                                   frozenset[str]]:
    """Tokens, word set, bigram set and numbers of a text (cached: rows of one corpus
    share their documents, so most document sentences are tokenized once per process)."""
    toks = words(text)
    return (tuple(toks), frozenset(toks), frozenset(_bigrams(toks)),
            frozenset(_NUMBER.findall(text)))


def _sent(key: str, text: str) -> _Sent:
    toks, ws, bi, nums = _tokenized(text)
    return _Sent(key, ws, bi, nums, len(toks))


@dataclass(frozen=True)
class RowText:
    """One row's sentences, tokenized once."""

    question: _Sent
    documents: tuple[tuple[_Sent, ...], ...]
    response: tuple[_Sent, ...]
    response_texts: tuple[str, ...]
    doc_words: frozenset[str]
    doc_bigrams: frozenset[tuple[str, str]]
    doc_numbers: frozenset[str]
    doc_lower: str
    hits: np.ndarray  # (response sentences, document sentences): shared word counts
    response_tokens: int  # content tokens of the response, with repeats
    response_novel: int  # of which in no document


def row_text(question: str, documents_sentences: Sequence[Sequence[tuple[str, str]]],
             response_sentences: Sequence[tuple[str, str]]) -> RowText:
    docs = tuple(tuple(_sent(k, t) for k, t in doc) for doc in documents_sentences)
    flat = [s for d in docs for s in d]
    dw: set[str] = set()
    db: set[tuple[str, str]] = set()
    dn: set[str] = set()
    for s in flat:
        dw |= s.words
        db |= s.bigrams
        dn |= s.numbers
    lower = "\n".join(t.lower() for doc in documents_sentences for _, t in doc)
    resp = tuple(_sent(k, t) for k, t in response_sentences)
    hits = np.array([[len(r.words & s.words) for s in flat] for r in resp],
                    dtype=np.float64).reshape(len(resp), len(flat))
    toks = [w for _, t in response_sentences for w in _tokenized(t)[0]]
    return RowText(_sent("q", question), docs, resp,
                   tuple(t for _, t in response_sentences),
                   frozenset(dw), frozenset(db), frozenset(dn), lower, hits,
                   len(toks), sum(1 for w in toks if w not in dw))


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def support_features(rt: RowText) -> np.ndarray:
    """One row of :data:`SUPPORT_FEATURES` per response sentence (shape ``(n, k)``)."""
    flat = [s for d in rt.documents for s in d]
    n_resp = len(rt.response)
    out = np.zeros((n_resp, len(SUPPORT_FEATURES)))
    sizes = np.array([len(s.words) for s in flat], dtype=np.float64)
    for i, (r, text) in enumerate(zip(rt.response, rt.response_texts, strict=True)):
        nw = len(r.words)
        hits = rt.hits[i]
        best = int(hits.max()) if flat else 0
        top2: set[str] = set()
        if flat and nw:
            for j in np.argsort(-hits, kind="stable")[:2]:
                top2 |= r.words & flat[int(j)].words
        best_bi = max((len(r.bigrams & s.bigrams) for s in flat), default=0)
        union = nw + sizes - hits
        best_jac = float(np.max(np.where(union > 0, hits / np.maximum(union, 1), 0.0))) \
            if flat else 0.0
        names = _names(text)
        novel_names = sum(1 for n in names if n not in rt.doc_lower)
        out[i] = (
            _share(best, nw),
            _share(len(top2), nw),
            _share(len(r.words - rt.doc_words), nw),
            _share(len(r.numbers - rt.doc_numbers), len(r.numbers)),
            1.0 if r.numbers else 0.0,
            _share(novel_names, len(names)),
            _share(len(r.bigrams & rt.doc_bigrams), len(r.bigrams)),
            _share(best_bi, len(r.bigrams)),
            math.log1p(nw),
            _share(i, max(n_resp - 1, 1)),
            1.0 if i == n_resp - 1 and n_resp > 1 else 0.0,
            math.log1p(n_resp),
            _share(len(r.words & rt.question.words), nw),
            1.0 if _REFUSAL.search(text) else 0.0,
            best_jac,
        )
    return out


def row_features(rt: RowText) -> np.ndarray:
    """One row of :data:`ROW_FEATURES` (shape ``(k,)``)."""
    resp_words: set[str] = set()
    resp_bi: set[tuple[str, str]] = set()
    for r in rt.response:
        resp_words |= r.words
        resp_bi |= r.bigrams
    sizes = np.array([len(r.words) for r in rt.response], dtype=np.float64)
    if rt.hits.size:
        best = rt.hits.max(axis=1)
        mean_cover = float(np.mean(np.where(sizes > 0, best / np.maximum(sizes, 1), 0.0)))
    else:
        mean_cover = 0.0
    best_doc = 0
    for doc in rt.documents:
        doc_words: set[str] = set()
        for s in doc:
            doc_words |= s.words
        best_doc = max(best_doc, len(resp_words & doc_words))
    q = rt.question.words
    return np.array([
        _share(rt.response_novel, rt.response_tokens),
        mean_cover,
        _share(len(resp_bi & rt.doc_bigrams), len(resp_bi)),
        _share(best_doc, len(resp_words)),
        _share(len(q - rt.doc_words), len(q)),
        math.log1p(sum(len(d) for d in rt.documents)),
    ])


def greedy_cover(rt: RowText, min_new: int, skip_question: bool) -> np.ndarray:
    """Which document sentences (flat, in key order) a greedy cover of the response picks:
    for each response sentence, repeatedly take the document sentence holding the most of
    its still uncovered words (those not in the question with ``skip_question``) while that
    sentence adds at least ``min_new`` of them.  A sentence a response was written from is
    the one that explains its words, so the picked set estimates the utilized sentences."""
    flat = [s for d in rt.documents for s in d]
    chosen = np.zeros(len(flat), dtype=bool)
    if not flat:
        return chosen
    for i, r in enumerate(rt.response):
        need = set(r.words - rt.question.words) if skip_question else set(r.words)
        # only sentences sharing a word with this response sentence can ever gain (min_new
        # >= 1), so the search runs over those, in key order
        index = np.flatnonzero(rt.hits[i])
        cands = [flat[j] for j in index]
        while need and cands:
            gains = [len(need & s.words) for s in cands]
            k = max(range(len(cands)), key=gains.__getitem__)  # first of the largest
            if gains[k] < min_new:
                break
            chosen[index[k]] = True
            need -= cands[k].words
    return chosen


def document_features(rt: RowText) -> np.ndarray:
    """One row of :data:`DOCUMENT_FEATURES` per document sentence, in key order."""
    q = rt.question.words
    resp_words: set[str] = set()
    resp_bi: set[tuple[str, str]] = set()
    resp_num: set[str] = set()
    for r in rt.response:
        resp_words |= r.words
        resp_bi |= r.bigrams
        resp_num |= r.numbers
    n_total = sum(len(d) for d in rt.documents)
    hits = rt.hits
    resp_sizes = np.array([len(r.words) for r in rt.response], dtype=np.float64)
    best_for = np.zeros(hits.shape[1], dtype=bool)  # best cover of some response sentence
    for i in range(hits.shape[0]):
        top = hits[i].max() if hits.shape[1] else 0.0
        if top > 0:
            best_for |= hits[i] == top
    n_flat = hits.shape[1]
    if hits.shape[0] and n_flat:
        most = hits.max(axis=0)
        cover_of = (np.where(resp_sizes[:, None] > 0, hits / np.maximum(resp_sizes, 1)[:, None],
                             0.0)).max(axis=0)
    else:
        most = cover_of = np.zeros(n_flat)
    greedy = greedy_cover(rt, 2, False)
    greedy_new = greedy_cover(rt, 1, True)
    rows: list[tuple[float, ...]] = []
    flat_index = 0
    for doc in rt.documents:
        q_hits = [len(q & s.words) for s in doc]
        best_q = max(q_hits, default=0)
        n_doc = len(doc)
        doc_rows: list[list[float]] = []
        for j, s in enumerate(doc):
            nw = len(s.words)
            best_r = float(most[flat_index]) / nw if nw else 0.0
            covers = float(cover_of[flat_index])
            doc_rows.append([
                _share(q_hits[j], len(q)),
                _share(q_hits[j], nw),
                _share(len(s.words & resp_words), nw),
                best_r,
                _share(len(s.bigrams & resp_bi), len(s.bigrams)),
                1.0 if s.numbers & resp_num else 0.0,
                _share(j, max(n_doc - 1, 1)),
                1.0 if j == 0 else 0.0,
                math.log1p(nw),
                math.log1p(n_total),
                1.0 if q_hits[j] == best_q and best_q > 0 else 0.0,
                0.0,
                covers,
                1.0 if best_for[flat_index] else 0.0,
                1.0 if greedy[flat_index] else 0.0,
                1.0 if greedy_new[flat_index] else 0.0,
            ])
            flat_index += 1
        rows.extend(tuple(r) for r in doc_rows)
    out = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(DOCUMENT_FEATURES))
    if len(rows):
        # rank of each sentence by response coverage within the row, 0 (best) .. 1 (worst)
        col = DOCUMENT_FEATURES.index("response_share")
        order = np.argsort(-out[:, col], kind="stable")
        ranks = np.empty(len(rows))
        ranks[order] = np.arange(len(rows)) / max(len(rows) - 1, 1)
        out[:, DOCUMENT_FEATURES.index("response_cover_rank")] = ranks
    return out
