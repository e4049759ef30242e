"""The Python door of ``rubric build``: :func:`build` and :func:`estimate`, taking the CLI's
flags as keyword arguments (snake_case, same defaults).

::

    from ragmeter.suites.rubric.build_api import build
    outcome = build("kb.md", sample=20, backend=my_backend, out="questions_en.json")
    outcome.summary["kept"], outcome.questions[0]["question"]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError
from ragmeter.llm.base import Backend
from ragmeter.runner import RunnerConfig
from ragmeter.store import Store
from ragmeter.suites.rubric.build import (
    DEFAULT_AUDIENCE,
    BuildConfig,
    BuildEstimate,
    BuildOutcome,
    build_questions,
    critique_only,
    estimate_build,
)
from ragmeter.suites.rubric.build_prompts import CRITERIA, BuildPrompts

__all__ = ["build", "estimate", "make_config", "make_prompts"]

Paths = str | Path | Sequence[str | Path] | None


def _paths(knowledge_base: Paths) -> list[str | Path]:
    if knowledge_base is None:
        return []
    if isinstance(knowledge_base, (str, Path)):
        return [knowledge_base]
    return list(knowledge_base)


def _languages(languages: str | Sequence[str] | None) -> tuple[str, ...]:
    if languages is None:
        return ()
    items = languages.split(",") if isinstance(languages, str) else list(languages)
    from ragmeter.text.languages import canonical_language, is_known_language

    out = []
    for item in items:
        code = canonical_language(item)
        if not code:
            continue
        if not is_known_language(code):
            raise ConfigError(f"rubric: --languages: {item!r} is not a language code. Fix: "
                              "give ISO 639-1 codes separated by commas, e.g. de,fr,es,ru,zh.")
        if code not in out:
            out.append(code)
    return tuple(out)


def make_config(*, chunking: str = "sections", chunk_size: int = 4000,
                min_chunk_chars: int = 50, sample: int | None = None, seed: int = 0,
                min_groundedness: int = 4, min_relevance: int = 4, min_standalone: int = 4,
                audience: str = DEFAULT_AUDIENCE, dedupe: bool = True,
                languages: str | Sequence[str] | None = None, source_language: str = "en",
                translate_knowledge_base: bool = False, resamples: int = 1000) -> BuildConfig:
    if translate_knowledge_base and not languages:
        raise ConfigError("rubric: --translate-knowledge-base needs --languages (the target "
                          "languages), e.g. --languages de,fr.")
    if chunking not in ("sections", "lines"):
        raise ConfigError(f"rubric: --chunking must be sections or lines, got {chunking!r}.")
    return BuildConfig(
        chunking=chunking,  # type: ignore[arg-type]
        chunk_size=chunk_size, min_chunk_chars=min_chunk_chars, sample=sample, seed=seed,
        thresholds={"groundedness": min_groundedness, "relevance": min_relevance,
                    "standalone": min_standalone},
        audience=audience, dedupe=dedupe, languages=_languages(languages),
        source_language=source_language, translate_knowledge_base=translate_knowledge_base,
        n_resamples=resamples)


def make_prompts(generation_prompt_file: str | Path | None = None,
                 critique_prompt_files: Mapping[str, str | Path] | Sequence[str] | None = None,
                 ) -> BuildPrompts:
    files: dict[str, str | Path] = {}
    if isinstance(critique_prompt_files, Mapping):
        files = dict(critique_prompt_files)
    else:
        for item in critique_prompt_files or ():
            name, sep, path = item.partition("=")
            if not sep or name.strip() not in CRITERIA or not path.strip():
                raise ConfigError(f"rubric: --critique-prompt-file {item!r} must be "
                                  f"CRITERION=PATH with CRITERION one of {', '.join(CRITERIA)}.")
            files[name.strip()] = path.strip()
    unknown = set(files) - set(CRITERIA)
    if unknown:
        raise ConfigError(f"rubric: unknown critique criterion {sorted(unknown)[0]!r}; known: "
                          f"{', '.join(CRITERIA)}.")
    return BuildPrompts.default().with_files(generation_prompt_file, files)


def _setup(backend: Backend | None, store: Store | str | Path | None,
           runner: RunnerConfig | None) -> tuple[Backend, Store | None, RunnerConfig]:
    if backend is None:
        from ragmeter.llm.registry import create_backend

        backend = create_backend("local")
    if store is not None and not isinstance(store, Store):
        store = Store(store)
    return backend, store, runner or RunnerConfig(progress=False)


def build(knowledge_base: Paths = None, *, out: str | Path | None = None,
          critique_only_path: str | Path | None = None,
          generation_prompt_file: str | Path | None = None,
          critique_prompt_files: Mapping[str, str | Path] | Sequence[str] | None = None,
          backend: Backend | None = None, store: Store | str | Path | None = None,
          runner: RunnerConfig | None = None, **options: Any) -> BuildOutcome:
    """Build questions from ``knowledge_base`` (a path or paths), or with
    ``critique_only_path`` re-rate a questions file; writes ``out`` (and the language files)
    when given.  ``options`` are :func:`make_config`'s (the CLI flags)."""
    config = make_config(**options)
    prompts = make_prompts(generation_prompt_file, critique_prompt_files)
    backend, store, runner = _setup(backend, store, runner)
    paths = _paths(knowledge_base)
    if critique_only_path is not None:
        if paths:
            raise ConfigError("rubric: give either KNOWLEDGE_BASE files or --critique-only, "
                              "not both.")
        if config.languages:
            raise ConfigError("rubric: --languages is not available with --critique-only.")
        outcome = critique_only(critique_only_path, config, backend, store, runner, prompts)
    else:
        if not paths:
            raise ConfigError("rubric: give at least one KNOWLEDGE_BASE file (Markdown or "
                              "text), or --critique-only QUESTIONS.")
        outcome = build_questions(paths, config, backend, store, runner, prompts)
    if out is not None:
        from ragmeter.suites.rubric.build_translate import write_build_outputs

        outcome.summary["written"] = [str(p) for p in write_build_outputs(
            outcome, out, config.source_language)]
    return outcome


def estimate(knowledge_base: Paths = None, *, critique_only_path: str | Path | None = None,
             generation_prompt_file: str | Path | None = None,
             critique_prompt_files: Mapping[str, str | Path] | Sequence[str] | None = None,
             backend: Backend | None = None, store: Store | str | Path | None = None,
             runner: RunnerConfig | None = None, **options: Any) -> BuildEstimate:
    """What :func:`build` with the same arguments would call and spend; calls nothing."""
    config = make_config(**options)
    prompts = make_prompts(generation_prompt_file, critique_prompt_files)
    backend, store, runner = _setup(backend, store, runner)
    paths = _paths(knowledge_base)
    if critique_only_path is None and not paths:
        raise ConfigError("rubric: give at least one KNOWLEDGE_BASE file, or --critique-only.")
    return estimate_build(paths or None, config, backend, store, replace(runner),
                          prompts, critique_path=critique_only_path)
