"""The columnar paths (Arrow; without pyarrow, msgspec's typed decoder for JSON Lines) and the
row path give identical results, item for item."""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.io import iter_rows, read_sha256
from ragmeter.io._samples import sample_path
from ragmeter.multilingual._fast import accumulate_columnar
from ragmeter.multilingual._score import score_file, score_rows
from ragmeter.multilingual._scorer import MultilingualConfig, _Accumulator
from tests.conftest import SHARED_DATA

LBRAG = SHARED_DATA / "lbrag" / "20251214_2145" / "20251214_2145_answers.jsonl"


@pytest.fixture(autouse=True)
def _columnar_for_small_files(monkeypatch):
    """score_file takes the row path below 1 MiB; these small files must take Arrow's."""
    from ragmeter.multilingual import _score as scorer

    monkeypatch.setattr(scorer, "FAST_PATH_MIN_BYTES", 0)


def _both(path: Path, config: MultilingualConfig):
    fast = score_file(path, config)
    slow = score_rows(iter_rows(path, component="multilingual"), config, source=str(path))
    return fast, slow


def _generated(tmp: Path, seed: int) -> Path:
    rng = random.Random(seed)
    alphabet = "abc ÀΣσς北京富士山 كتب 서울 ١٢ 12.,!-\t"
    rows = []
    for i in range(300):
        for system in ("direct", "x", "y"):
            rows.append({
                "sample_id": f"s{i}", "system": system,
                "sample_lang": rng.choice(["en", "ja", "zh_cn", "ar", "ko", "de"]),
                "question": "q" * rng.randint(0, 3),
                "gold_answer": "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))),
                "pred_answer": "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))),
                "translate_tokens": rng.choice([0, 0, 7, 120.5]),
                "semantic_score": rng.choice([None, 0.0, 0.5, 1.0]),
            })
    path = tmp / f"gen{seed}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


@pytest.mark.parametrize("seed", [4, 5])
def test_coded_columns_identical(tmp_path: Path, seed: int) -> None:
    """Without texts kept, big batches read the system and the gold answer as Arrow's
    dictionary codes (no string per row): the same systems in the same order, the same
    metrics and items as the row path, with systems that first appear mid-file and rows of
    each system interleaved in a shuffled order."""
    path = _generated(tmp_path, seed)
    lines = path.read_text("utf-8").splitlines(keepends=True)
    random.Random(seed).shuffle(lines)
    extra = json.loads(lines[700])
    lines.insert(700, json.dumps({**extra, "system": "late"}, ensure_ascii=False) + "\n")
    path.write_text("".join(lines), "utf-8")
    config = MultilingualConfig(keep_text=False)
    acc = accumulate_columnar(path, config, _Accumulator)
    assert acc is not None and list(acc.columns)[-1] == "late"  # fast path taken
    fast, slow = _both(path, config)
    assert fast.systems == slow.systems
    assert fast.metrics == slow.metrics
    assert list(fast.iter_items()) == list(slow.iter_items())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_files_identical(tmp_path: Path, seed: int) -> None:
    path = _generated(tmp_path, seed)
    config = MultilingualConfig(keep_text=True)
    assert accumulate_columnar(path, config, _Accumulator) is not None  # fast path taken
    fast, slow = _both(path, config)
    assert fast.metrics == slow.metrics
    assert list(fast.iter_items()) == list(slow.iter_items())


def test_parquet_and_jsonl_identical(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _generated(tmp_path, 4)
    rows = [r.data for r in iter_rows(path)]
    pq_path = tmp_path / "gen.parquet"
    pq.write_table(pa.Table.from_pylist(rows), pq_path)
    config = MultilingualConfig(keep_text=True)
    a, b = score_file(path, config), score_file(pq_path, config)
    assert a.metrics == b.metrics
    assert list(a.iter_items()) == list(b.iter_items())


def test_sample_and_released_run_identical() -> None:
    paths = [sample_path("multilingual_answers.jsonl")]
    if LBRAG.exists():
        paths.append(LBRAG)
    for path in paths:
        fast, slow = _both(path, MultilingualConfig(keep_text=True))
        assert fast.metrics == slow.metrics
        assert list(fast.iter_items()) == list(slow.iter_items())


def test_without_pyarrow_jsonl_scores_and_parquet_names_the_extra(tmp_path: Path,
                                                                  monkeypatch) -> None:
    """Issue 14: pyarrow is the ``parquet`` extra.  Without it JSON Lines takes the row path
    (same numbers) and a Parquet file gives the install hint, not a traceback."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ragmeter.errors import MissingDependencyError

    path = _generated(tmp_path, 5)
    pq_path = tmp_path / "gen.parquet"
    pq.write_table(pa.Table.from_pylist([r.data for r in iter_rows(path)]), pq_path)
    config = MultilingualConfig(keep_text=True)
    with_arrow = score_file(path, config)
    for name in ("pyarrow", "pyarrow.parquet", "pyarrow.json"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    # JSON Lines is read by msgspec's typed decoder (a core dependency), Arrow or not
    assert accumulate_columnar(path, config, _Accumulator) is not None
    assert score_file(path, config).metrics == with_arrow.metrics
    monkeypatch.setitem(sys.modules, "msgspec", None)  # and without it, the row path
    assert accumulate_columnar(path, config, _Accumulator) is None
    without = score_file(path, config)
    assert without.metrics == with_arrow.metrics
    with pytest.raises(MissingDependencyError, match=r"ragmeter\[parquet\]"):
        score_file(pq_path, config)


def _typed_only(monkeypatch) -> None:
    """Without pyarrow, JSON Lines takes msgspec's typed decoder."""
    from ragmeter.multilingual import _fast

    monkeypatch.setattr(_fast, "has_pyarrow", lambda: False)


@pytest.mark.parametrize("seed", [1, 2])
def test_typed_decoder_equals_arrow(tmp_path: Path, monkeypatch, seed: int) -> None:
    """msgspec's typed decoder (no pyarrow) gives the very items of Arrow's reader."""
    path = _generated(tmp_path, seed)
    config = MultilingualConfig(keep_text=True)
    arrow = score_file(path, config)
    _typed_only(monkeypatch)
    assert accumulate_columnar(path, config, _Accumulator) is not None  # typed path taken
    typed = score_file(path, config)
    assert typed.metrics == arrow.metrics
    assert list(typed.iter_items()) == list(arrow.iter_items())


ODD = [  # what the typed decoder must hand to the row path (or read exactly)
    lambda r: r.update(translate_tokens="12"),  # a number as text
    lambda r: r.update(translate_tokens=True),
    lambda r: r.update(translate_tokens=None),  # cost from evidence
    lambda r: r.pop("translate_tokens"),
    lambda r: r.update(pred_answer=None),  # unscored
    lambda r: r.pop("pred_answer"),
    lambda r: r.update(sample_id=17),
    lambda r: r.update(sample_lang="xx-unknown"),
    lambda r: r.update(semantic_score=1.5),
    lambda r: r.update(semantic_score=-0.0),
    lambda r: r.update(translate_tokens=1e300, extra={"a": [1, 2]}),
    lambda r: r.update(question=5),
]


@pytest.mark.parametrize("typed", [True, False])
@pytest.mark.parametrize("k", range(len(ODD)))
def test_odd_rows_give_what_the_row_path_gives(tmp_path: Path, monkeypatch, k: int,
                                               typed: bool) -> None:
    """Both columnar readers (msgspec's, Arrow's)."""
    from ragmeter.errors import InputError

    if typed:
        _typed_only(monkeypatch)

    path = _generated(tmp_path, 6)
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    ODD[k](rows[500])
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n\n",
                    "utf-8")
    config = MultilingualConfig(keep_text=True)
    try:
        slow = score_rows(iter_rows(path, component="multilingual"), config, source=str(path))
    except InputError as exc:
        with pytest.raises(InputError) as fast_exc:
            score_file(path, config)
        assert str(fast_exc.value) == str(exc)
        return
    fast = score_file(path, config)
    assert fast.metrics == slow.metrics
    assert list(fast.iter_items()) == list(slow.iter_items())


@pytest.mark.parametrize("block", [700, 4096, 1 << 21])
def test_arrow_batches_of_whole_lines_equal_the_row_path(tmp_path: Path, monkeypatch,
                                                         block: int) -> None:
    """Arrow parses the file in batches of whole lines (``_ARROW_BLOCK`` bytes at a time,
    issue 26.3): a byte-order mark, blank lines (some of CRLF) and no final newline give the
    row path's items, on the columnar path; a line longer than a block (the 700-byte one)
    grows the buffer (``io.jsonl_views``) and stays on it."""
    from ragmeter.multilingual import _fast
    from ragmeter.multilingual._rows import FastPathUnsupported

    monkeypatch.setattr(_fast, "_ARROW_BLOCK", block)
    path = _generated(tmp_path, 7)
    lines = path.read_text("utf-8").splitlines()
    lines[3] = lines[3].replace('"question": "', '"question": "' + "q" * 900)
    lines[10:10] = ["", "\r", "   "]
    path.write_text("\ufeff" + "\n".join(lines), "utf-8")
    config = MultilingualConfig(keep_text=True)
    assert accumulate_columnar(path, config, _Accumulator) is not None  # Arrow's path
    # the run record's hash of the input, taken as Arrow's blocks were read
    assert read_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    fast, slow = _both(path, config)
    assert fast.metrics == slow.metrics
    assert list(fast.iter_items()) == list(slow.iter_items())
    # a line over the line limit (RAGMETER_MAX_LINE_MB) leaves Arrow's path: the row path
    # refuses it with its line number
    monkeypatch.setenv("RAGMETER_MAX_LINE_MB", "0.0008")  # 838 bytes, under line 4's 900+
    with pytest.raises(FastPathUnsupported):
        accumulate_columnar(path, config, _Accumulator)
    with pytest.raises(InputError, match="line 4"):
        score_file(path, config)
