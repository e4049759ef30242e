"""The translation stage of ``rubric build --languages``: question files per language in
RAGaliq's form (``question, answer, context, source_q, source_a, source_c``) and, with
``--translate-knowledge-base``, the knowledge base line by line as ``{idx, source,
translation}`` records (RAGaliq's ``orientation_<lang>.json``), plus the output file names."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.backends._types import Backend
from ragmeter.rubric._build_prompts import BuildPrompts
from ragmeter.rubric._translate import (
    LanguageCheck,
    Translation,
    translate_texts,
    translation_request,
)
from ragmeter.runner._run import DryRunEstimate, RunnerConfig, estimate_requests
from ragmeter.runner._store import Store

if TYPE_CHECKING:
    from ragmeter.rubric._build_types import BuildConfig, BuildOutcome

__all__ = ["translate_outputs", "translation_estimate", "kb_lines", "language_path",
           "kb_markdown", "write_build_outputs"]

FIELDS = (("question", "source_q"), ("answer", "source_a"), ("context", "source_c"))


def kb_lines(path: str | Path) -> list[tuple[int, str]]:
    """(line index, text) of each distinct non-blank line, first occurrence (RAGaliq's
    knowledge-base translation records are per distinct line, ``idx`` its line number)."""
    seen: set[str] = set()
    out = []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines()):
        s = line.strip()
        if s and s not in seen:
            seen.add(s)
            out.append((i, s))
    return out


def language_path(path: str | Path, lang: str, source_lang: str) -> Path:
    """``questions_en.jsonl`` -> ``questions_de.jsonl``; ``questions.jsonl`` ->
    ``questions_de.jsonl`` (RAGaliq's ``<name>_<lang>`` naming)."""
    p = Path(path)
    stem = p.stem
    suffix = f"_{source_lang}"
    base = stem[: -len(suffix)] if stem.endswith(suffix) else stem
    return p.with_name(f"{base}_{lang}{p.suffix}")


def kb_markdown(path: str | Path, records: Sequence[Mapping[str, Any]]) -> str:
    """The knowledge base with every translated line replaced (blank lines and lines without a
    translation kept as they are), so ``rubric run --kb`` can use it."""
    by_text = {r["source"]: r["translation"] for r in records if r.get("translation")}
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return "\n".join(by_text.get(line.strip(), line) if line.strip() else line
                     for line in lines) + "\n"


def _mark(row: dict[str, Any], name: str, tr: Translation) -> None:
    if tr.status in ("wrong_language", "retried"):
        row.setdefault("language_check", {})[name] = tr.status
    if tr.confidence is not None:
        row.setdefault("language_confidence", {})[name] = round(tr.confidence, 4)


def translate_outputs(outcome: BuildOutcome, paths: Sequence[str | Path], config: BuildConfig,
                      prompts: BuildPrompts, backend: Backend, store: Store | None,
                      runner: RunnerConfig) -> None:
    """Translate the kept questions (and the knowledge base) into ``config.languages``; fills
    ``outcome.translations``, ``outcome.knowledge_base`` and ``summary["translation"]``."""
    src = config.source_language
    check = LanguageCheck([src, *config.languages])
    texts: list[tuple[str, str, str]] = []
    for lang in config.languages:
        for q in outcome.questions:
            for name, _ in FIELDS:
                texts.append((f"{q['id']}:{name}", lang, str(q[name])))
    kb: dict[str, list[tuple[int, str]]] = {}
    if config.translate_knowledge_base:
        outcome.summary["kb_paths"] = {Path(p).name: str(p) for p in paths}
        for path in paths:
            kb[Path(path).name] = kb_lines(path)
            for lang in config.languages:
                texts.extend((f"kb:{Path(path).name}:{idx}", lang, text)
                             for idx, text in kb[Path(path).name])
    done = translate_texts(texts, src, prompts, backend, store, runner, check)
    stats: dict[str, Any] = {}
    for lang in config.languages:
        rows: list[dict[str, Any]] = []
        statuses: Counter[str] = Counter()
        dropped = 0
        for q in outcome.questions:
            row: dict[str, Any] = {"id": q["id"]}
            failed = []
            for name, _ in FIELDS:
                tr = done[(lang, f"{q['id']}:{name}")]
                statuses[tr.status] += 1
                if tr.text is None:
                    failed.append(f"{name}: {tr.reason}")
                row[name] = tr.text
                _mark(row, name, tr)
            for name, source_name in FIELDS:
                row[source_name] = q[name]
            if failed:
                dropped += 1
                outcome.items.append({"id": q["id"], "lang": lang, "status": "unscored",
                                      "reason": "translation_failed",
                                      "detail": "; ".join(failed)})
                continue
            rows.append(row)
        outcome.translations[lang] = rows
        entry: dict[str, Any] = {"questions": len(rows), "dropped_failed_calls": dropped,
                                 "texts": dict(statuses)}
        if kb:
            kb_stats: Counter[str] = Counter()
            outcome.knowledge_base[lang] = {}
            for name, lines in kb.items():
                records = []
                for idx, text in lines:
                    tr = done[(lang, f"kb:{name}:{idx}")]
                    kb_stats[tr.status] += 1
                    rec: dict[str, Any] = {"idx": idx, "source": text,
                                           "translation": tr.text}
                    if tr.status in ("wrong_language", "failed"):
                        rec["language_check"] = tr.status
                    records.append(rec)
                outcome.knowledge_base[lang][name] = records
            entry["knowledge_base_lines"] = dict(kb_stats)
        stats[lang] = entry
    outcome.summary["translation"] = {"source_language": src,
                                      "languages": list(config.languages), "by_language": stats}
    wrong = {lang: s["texts"].get("wrong_language", 0) for lang, s in stats.items()}
    if any(wrong.values()):
        outcome.summary["notes"].append(
            "translations still in the wrong language after one retry (kept, marked "
            "language_check=wrong_language): " + ", ".join(
                f"{k} {v}" for k, v in wrong.items() if v))


def translation_estimate(rows: Sequence[Mapping[str, Any]], paths: Sequence[str | Path],
                         config: BuildConfig, prompts: BuildPrompts, backend: Backend,
                         store: Store | None) -> list[tuple[str, DryRunEstimate]]:
    src = config.source_language
    reqs = [translation_request(f"{r['id']}:{name}", str(r[name]), lang, src, prompts)
            for lang in config.languages for r in rows for name, _ in FIELDS]
    out = [("translate questions", estimate_requests(reqs, backend, store))]
    if config.translate_knowledge_base:
        kb_reqs = [translation_request(f"kb:{Path(p).name}:{idx}", text, lang, src, prompts)
                   for p in paths for idx, text in kb_lines(p) for lang in config.languages]
        out.append(("translate knowledge base", estimate_requests(kb_reqs, backend, store)))
    return out


def _write_rows(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    from ragmeter.io import write_json, write_jsonl

    if path.suffix.lower() == ".json":
        write_json(path, list(rows))  # RAGaliq's files are one JSON list
    else:
        write_jsonl(path, rows)


def write_build_outputs(outcome: BuildOutcome, out: str | Path,
                        source_language: str = "en") -> list[Path]:
    """Write the kept questions to ``out`` (a ``.json`` list, else JSON Lines), one file per
    language beside it, and the translated knowledge bases (``<kb>_<lang>.json`` records and
    ``<kb>_<lang>.md``) in the same folder; returns the paths written."""
    from ragmeter.io import write_json, write_text

    out = Path(out)
    written = [out]
    _write_rows(out, outcome.questions)
    for lang, rows in outcome.translations.items():
        target = language_path(out, lang, source_language)
        _write_rows(target, rows)
        written.append(target)
    for lang, files in outcome.knowledge_base.items():
        for name, records in files.items():
            src = Path(outcome.summary.get("kb_paths", {}).get(name, name))
            base = language_path(out.parent / Path(name).name, lang, source_language)
            write_json(base.with_suffix(".json"), records)
            written.append(base.with_suffix(".json"))
            if src.exists():
                write_text(base.with_suffix(".md"), kb_markdown(src, records))
                written.append(base.with_suffix(".md"))
    return written
