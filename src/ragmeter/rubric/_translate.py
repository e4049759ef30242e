"""Translation for ``rubric build --languages``: requests, the language check and the retry.

RAGaliq translated its questions, answers and chunks (``src/data_generation/translate.py``,
``translate_questions.py``) and its knowledge base line by line into ``{idx, source,
translation}`` records.  ragmeter adds a check: every translated text goes through ragmeter's
language identification (:class:`ragmeter.text._rlc.LidRlc`, lingua restricted to the
source language and the target languages); a text whose confidence for the target language is
below :data:`MIN_CONFIDENCE` is translated once more with a stricter prompt (``repeat=1``,
so it is a new call, also stored), and if it is still in the wrong language it is kept but
marked ``wrong_language``.  Texts with fewer than :data:`MIN_LETTERS` letters or
:data:`MIN_WORDS` words (names, numbers, headings) are not checked: language identification is
unreliable on them (lingua gives "CyberBoris" 0.45 German).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ragmeter._util._record import replace
from ragmeter.backends._types import Backend, Request
from ragmeter.rubric._build_prompts import BuildPrompts
from ragmeter.runner._run import RunnerConfig, run_requests
from ragmeter.runner._store import Store

__all__ = ["LANGUAGE_NAMES", "language_name", "LanguageCheck", "Translation",
           "translation_request", "translate_texts", "MIN_CONFIDENCE"]

MIN_CONFIDENCE = 0.5
MIN_LETTERS = 15
MIN_WORDS = 3

LANGUAGE_NAMES: Mapping[str, str] = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "ru": "Russian",
    "zh": "Chinese (Simplified)", "it": "Italian", "pt": "Portuguese", "ja": "Japanese",
    "ko": "Korean", "ar": "Arabic", "nl": "Dutch", "pl": "Polish", "tr": "Turkish",
    "uk": "Ukrainian", "hi": "Hindi", "sv": "Swedish", "cs": "Czech", "fi": "Finnish",
}

Status = Literal["ok", "retried", "wrong_language", "unchecked", "failed"]


def language_name(code: str) -> str:
    """English name of a language code for the prompt (``de`` -> German)."""
    base = code.lower().replace("-", "_").split("_")[0]
    return LANGUAGE_NAMES.get(base, code)


def _checkable(text: str) -> bool:
    letters = sum(1 for ch in text if ch.isalpha())
    cjk = any("\u4e00" <= ch <= "\u9fff" or "\u3040" <= ch <= "\u30ff" for ch in text)
    return letters >= MIN_LETTERS and (cjk or len(text.split()) >= MIN_WORDS)


class LanguageCheck:
    """Is a text in the expected language?  Built once for the languages of a build."""

    def __init__(self, languages: Sequence[str]) -> None:
        from ragmeter.text._rlc import LidRlc

        self.lid = LidRlc(list(languages))

    def confidence(self, text: str, lang: str) -> float | None:
        """Confidence that ``text`` is in ``lang``; None when not checked (too short, or a
        language the identifier does not know)."""
        if not _checkable(text) or not self.lid.supports(lang):
            return None
        return self.lid.score(text, lang)


@dataclass(frozen=True)
class Translation:
    """One translated text: ``text`` is None only when the call failed (``status`` failed)."""

    text: str | None
    status: Status
    confidence: float | None = None
    reason: str | None = None
    detail: str | None = None


def translation_request(key: str, text: str, lang: str, source_lang: str,
                        prompts: BuildPrompts, retry: bool = False) -> Request:
    """One translation call; ``max_tokens`` grows with the text (one token per source
    character plus 64, at most 4096) so the dry-run bound is not the template's maximum."""
    tpl = prompts.translate_retry if retry else prompts.translate
    params: dict[str, Any] = dict(tpl.params)
    params["max_tokens"] = min(int(params.get("max_tokens", 4096)), 64 + len(text))
    msgs = tpl.render(text=text, language=language_name(lang),
                      source_language=language_name(source_lang))
    return Request(id=f"tr:{lang}:{key}", messages=msgs, params=params,
                   repeat=1 if retry else 0)


def translate_texts(texts: Sequence[tuple[str, str, str]], source_lang: str,
                    prompts: BuildPrompts, backend: Backend, store: Store | None,
                    config: RunnerConfig, check: LanguageCheck | None,
                    ) -> dict[tuple[str, str], Translation]:
    """Translate ``(key, lang, text)`` triples; returns ``{(lang, key): Translation}``.

    Empty texts are returned as they are, without a call."""
    out: dict[tuple[str, str], Translation] = {}
    todo = []
    for key, lang, text in texts:
        if not text.strip():
            out[(lang, key)] = Translation(text, "unchecked")
        else:
            todo.append((key, lang, text))
    requests = [translation_request(k, t, lang, source_lang, prompts) for k, lang, t in todo]
    outcomes = run_requests(requests, backend, store,
                            replace(config, description="translate"))
    retry: list[tuple[str, str, str, float]] = []
    for (key, lang, text), o in zip(todo, outcomes, strict=True):
        if not o.ok or o.response is None:
            out[(lang, key)] = Translation(None, "failed", reason=o.reason, detail=o.detail)
            continue
        translated = o.response.text.strip()
        conf = check.confidence(translated, lang) if check is not None else None
        if conf is not None and conf < MIN_CONFIDENCE:
            retry.append((key, lang, text, conf))
        else:
            out[(lang, key)] = Translation(translated, "unchecked" if conf is None else "ok",
                                           conf)
    if retry:
        requests = [translation_request(k, t, lang, source_lang, prompts, retry=True)
                    for k, lang, t, _ in retry]
        outcomes = run_requests(requests, backend, store,
                                replace(config, description="translate (retry)"))
        for (key, lang, _, first_conf), o in zip(retry, outcomes, strict=True):
            if not o.ok or o.response is None:
                out[(lang, key)] = Translation(None, "failed", reason=o.reason,
                                               detail=o.detail)
                continue
            translated = o.response.text.strip()
            conf = check.confidence(translated, lang) if check is not None else None
            if conf is not None and conf < MIN_CONFIDENCE:
                out[(lang, key)] = Translation(
                    translated, "wrong_language", conf, reason="wrong_language",
                    detail=f"language check: {lang} confidence {first_conf:.2f}, then "
                           f"{conf:.2f} after one retry")
            else:
                out[(lang, key)] = Translation(translated, "retried", conf)
    return out
