"""Sample data that comes with ragmeter, written by the ragmeter authors (Apache-2.0).

Most samples ship as files under ``ragmeter/data/samples``.  The multilingual sample (12
common-knowledge questions in 12 languages and scripts, three made-up systems; written here)
and the criteria sample (hand-scored answers; :mod:`ragmeter.io._sample_criteria`) are kept
as data and materialized on first use into ``$RAGMETER_HOME/samples/``, so that no data file
in the repository has the shape of a third-party run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ragmeter._util._package import package_file
from ragmeter.errors import UnknownNameError

__all__ = ["sample_path", "list_samples", "multilingual_sample_rows"]

# (id, language, question, gold answer, answers of the systems direct / retrieve / bridge,
#  semantic scores direct / retrieve / bridge, bridge translation tokens)
_MULTILINGUAL = (
    ("q01", "en", "What is the capital of Australia?", "Canberra",
     ("Sydney", "Canberra", "Canberra"), (0.0, 1.0, 1.0), 120),
    ("q02", "de", "Wie heißt die Hauptstadt von Kanada?", "Ottawa",
     ("Toronto", "Ottawa", "The capital is Ottawa"), (0.0, 1.0, 1.0), 95),
    ("q03", "fr", "Quel est le plus long fleuve de France ?", "La Loire",
     ("La Seine", "La Loire", "la Loire"), (0.0, 1.0, 1.0), 88),
    ("q04", "es", "¿En qué año llegó el ser humano a la Luna?", "1969",
     ("1969", "En 1969.", "1969"), (1.0, 1.0, 1.0), 60),
    ("q05", "ru", "Кто написал роман «Война и мир»?", "Лев Толстой",
     ("Толстой", "Лев Толстой", "Лев Николаевич Толстой"), (0.8, 1.0, 1.0), 140),
    ("q06", "ja", "日本で一番高い山は何ですか？", "富士山",
     ("富士山です", "富士山", "Mount Fuji"), (1.0, 1.0, 0.9), 110),
    ("q07", "zh_cn", "中国的首都是哪个城市？", "北京",
     ("北京市", "北京", "北京"), (1.0, 1.0, 1.0), 75),
    ("q08", "ar", "ما هي عاصمة مصر؟", "القاهرة",
     ("القاهرة", "القاهرة", "Cairo"), (1.0, 1.0, 0.9), 130),
    ("q09", "ko", "대한민국의 수도는 어디입니까?", "서울",
     ("서울", "서울특별시", "서울"), (1.0, 1.0, 1.0), 90),
    ("q10", "he", "מהי בירת ישראל?", "ירושלים",
     ("תל אביב", "ירושלים", "ירושלים"), (0.0, 1.0, 1.0), 105),
    ("q11", "th", "เมืองหลวงของประเทศไทยคืออะไร", "กรุงเทพมหานคร",
     ("กรุงเทพฯ", "กรุงเทพมหานคร", "กรุงเทพมหานคร"), (0.9, 1.0, 1.0), 150),
    ("q12", "it", "Chi ha dipinto la Gioconda?", "Leonardo da Vinci",
     ("Leonardo", "Leonardo da Vinci", "Leonardo da Vinci"), (0.7, 1.0, 1.0), 80),
)
_SYSTEMS = ("direct", "retrieve", "bridge")


def multilingual_sample_rows() -> list[dict[str, object]]:
    """The built-in multilingual sample: one row per (system, question), 36 rows.

    ``direct`` answers without documents (cost 0), ``retrieve`` with retrieved documents whose
    cost comes from ``evidence`` (0 tokens), ``bridge`` translates (``translate_tokens``).
    It includes a wrong-language answer in the same script (English for German) and answers in
    the wrong script, for the RLC and ``--rlc-lid`` columns.
    """
    rows: list[dict[str, object]] = []
    for qid, lang, question, gold, answers, semantic, bridge_tokens in _MULTILINGUAL:
        for k, system in enumerate(_SYSTEMS):
            row: dict[str, object] = {
                "sample_id": f"demo_{qid}_{lang}", "sample_lang": lang, "system": system,
                "question": question, "gold_answer": gold, "pred_answer": answers[k]}
            if system == "retrieve":
                row["evidence"] = [{"id": f"doc_{qid}_1", "metadata": {"token_count": 0}}]
            else:
                row["translate_tokens"] = bridge_tokens if system == "bridge" else 0
            row["semantic_score"] = semantic[k]
            rows.append(row)
    return rows


def _criteria_rows() -> list[dict[str, object]]:
    from ragmeter.io._sample_criteria import criteria_sample_rows

    return criteria_sample_rows()


# The samples kept as data: file name -> its rows.
_GENERATED: dict[str, Callable[[], list[dict[str, object]]]] = {
    "multilingual_answers.jsonl": multilingual_sample_rows,
    "criteria_answers.jsonl": _criteria_rows,
}


def list_samples() -> list[str]:
    root = package_file("ragmeter", "data", "samples")
    return sorted({p.name for p in root.iterdir() if p.is_file()} | set(_GENERATED))


def _materialize(name: str) -> Path:
    from ragmeter._util._home import data_home
    from ragmeter.io import write_jsonl

    path = data_home() / "samples" / name
    rows = _GENERATED[name]()
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        write_jsonl(path, rows)  # atomic
    return path


def sample_path(name: str) -> Path:
    """Path of a built-in sample file."""
    if name in _GENERATED:
        return _materialize(name)
    target = package_file("ragmeter", "data", "samples", name)
    if not target.is_file():
        raise UnknownNameError("sample", name, list_samples())
    return target
