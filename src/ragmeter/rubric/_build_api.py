"""``rubric build`` from its options: the configuration and prompts from the CLI's flags
(snake_case, same defaults), the run and the dry-run estimate.  The public door is
:func:`ragmeter.rubric.build`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ragmeter.backends._types import Backend
from ragmeter.errors import ConfigError
from ragmeter.rubric._build import (
    BuildConfig,
    BuildEstimate,
    BuildOutcome,
    build_failure,
    build_questions,
    critique_only,
    estimate_build,
)
from ragmeter.rubric._build_prompts import CRITERIA, BuildPrompts
from ragmeter.rubric._options import ChunkOptions, CritiqueOptions, TranslationOptions
from ragmeter.runner._run import RunnerConfig
from ragmeter.runner._store import Store

__all__ = ["run_build", "estimate", "make_config", "make_prompts"]

Paths = str | Path | Sequence[str | Path] | None

def _paths(knowledge_base: Paths) -> list[str | Path]:
    from ragmeter.io import as_paths

    return as_paths(knowledge_base, "knowledge_base", "rubric", what="Markdown or text files")

def _languages(languages: str | Sequence[str] | None) -> tuple[str, ...]:
    if languages is None:
        return ()
    items = languages.split(",") if isinstance(languages, str) else list(languages)
    from ragmeter.text._languages import canonical_language, is_known_language

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

def make_config(chunks: ChunkOptions, critique: CritiqueOptions,
                translation: TranslationOptions) -> BuildConfig:
    """The builder's configuration from the verb's option groups (checked here, so a wrong
    value is a one-line error before anything is read or called)."""
    if translation.translate_knowledge_base and not translation.languages:
        raise ConfigError("rubric: --translate-knowledge-base needs --languages (the target "
                          "languages), e.g. --languages de,fr.")
    if critique.critique_scoring not in ("generate", "choices"):
        raise ConfigError(f"rubric: --critique-scoring must be generate or choices, got "
                          f"{critique.critique_scoring!r}.")
    if chunks.chunking not in ("sections", "lines"):
        raise ConfigError(f"rubric: --chunking must be sections or lines, got "
                          f"{chunks.chunking!r}.")
    return BuildConfig(
        chunking=chunks.chunking,  # type: ignore[arg-type]
        chunk_size=chunks.chunk_size, min_chunk_chars=chunks.min_chunk_chars,
        sample=chunks.sample, seed=chunks.seed,
        thresholds={"groundedness": critique.min_groundedness,
                    "relevance": critique.min_relevance,
                    "standalone": critique.min_standalone},
        audience=critique.audience, dedupe=critique.dedupe,
        languages=_languages(translation.languages),
        source_language=translation.source_language,
        translate_knowledge_base=translation.translate_knowledge_base,
        n_resamples=critique.resamples,
        critique_scoring=critique.critique_scoring)  # type: ignore[arg-type]

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

def _paths_or_error(knowledge_base: Paths, critique_path: str | Path | None,
                    config: BuildConfig) -> list[str | Path]:
    paths = _paths(knowledge_base)
    if critique_path is not None:
        if paths:
            raise ConfigError("rubric: give either KNOWLEDGE_BASE files or --critique-only, "
                              "not both.")
        if config.languages:
            raise ConfigError("rubric: --languages is not available with --critique-only.")
    elif not paths:
        raise ConfigError("rubric: give at least one KNOWLEDGE_BASE file (Markdown or "
                          "text), or --critique-only QUESTIONS.")
    return paths

def run_build(knowledge_base: Paths, *, critique_path: str | Path | None, config: BuildConfig,
              prompts: BuildPrompts, backend: Backend, store: Store | None,
              runner: RunnerConfig, out: str | Path | None = None) -> BuildOutcome:
    """Build (or, with ``critique_path``, re-rate) and write ``out`` and the language files
    (not when the build produced no question: :func:`~ragmeter.rubric._build.build_failure`)."""
    paths = _paths_or_error(knowledge_base, critique_path, config)
    if critique_path is not None:
        outcome = critique_only(critique_path, config, backend, store, runner, prompts)
    else:
        outcome = build_questions(paths, config, backend, store, runner, prompts)
    if out is not None and build_failure(outcome.summary) is None:  # never write an empty set
        from ragmeter.rubric._build_translate import write_build_outputs

        outcome.summary["written"] = [str(p) for p in write_build_outputs(
            outcome, out, config.source_language)]
    return outcome

def estimate(knowledge_base: Paths, *, critique_path: str | Path | None, config: BuildConfig,
             prompts: BuildPrompts, backend: Backend, store: Store | None,
             runner: RunnerConfig) -> BuildEstimate:
    """What :func:`run_build` with the same arguments would call and spend; calls nothing."""
    paths = _paths_or_error(knowledge_base, critique_path, config)
    return estimate_build(paths or None, config, backend, store, runner, prompts,
                          critique_path=critique_path)
