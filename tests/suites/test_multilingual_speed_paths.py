"""Issue 14: a small ``multilingual score`` loads only what it uses, and every shortcut taken
for speed gives exactly the numbers of the path it replaces.

Nothing here is timed (timings live in benchmarks/bench_scoring.py); the start-up test checks
which modules a 10-row score imports, by name, in a fresh process.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.multilingual._cost import cnbe, cnbe_many
from ragmeter.runs._columns import scored_positions
from ragmeter.runs._records import _cap_items, read_items, write_run
from ragmeter.stats import _core as stats

# Modules a 10-row score has no use for: numpy/pyarrow (batch forms and the columnar reader
# pay off only on big files), rich (the table is plain text), pydantic (the record is written
# without its model), and everything of judging, models and the store.
HEAVY = ("numpy", "pyarrow", "ray", "rich", "pydantic", "jinja2", "lingua", "httpx", "yaml",
         "pandas", "torch", "transformers", "sqlite3", "tempfile", "asyncio",
         "ragmeter.runner._run", "ragmeter.runner._store", "ragmeter.judges._card", "ragmeter.backends._types",
         "ragmeter.backends", "ragmeter.runs._model", "ragmeter.runner.engines", "ragmeter.view")


def _rows(n: int, seed: int = 0) -> list[dict]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import random

    from bench_scoring import SYSTEMS, WORDS, _phrase

    rng = random.Random(seed)
    out = []
    langs = list(WORDS)
    for i in range(n // len(SYSTEMS)):
        lang = langs[i % len(langs)]
        gold = _phrase(rng, lang, rng.randint(1, 3))
        for k, system in enumerate(SYSTEMS):
            pred = gold if rng.random() < 0.4 else _phrase(rng, lang, rng.randint(0, 6))
            out.append({"sample_id": f"q{i}", "sample_lang": lang, "system": system,
                        "gold_answer": gold, "pred_answer": None if k == 3 and i % 7 == 5 else pred,
                        "translate_tokens": 0 if k < 2 else rng.randint(0, 300),
                        "semantic_score": None if i % 3 else rng.random()})
    return out


def _score_in_subprocess(tmp_path: Path, rows: int, *flags: str) -> tuple[Any, set[str]]:
    """``multilingual score`` on ``rows`` generated rows in a fresh process: its completed
    process and the names of every module it had imported at the end."""
    path = tmp_path / f"rows{rows}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _rows(rows)),
                    encoding="utf-8")
    code = ("import sys\nfrom ragmeter.cli import main\n"
            "try:\n    main(['multilingual', 'score', *sys.argv[1:]])\n"
            "except SystemExit as e:\n    print('EXIT', e.code, file=sys.stderr)\n"
            "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n")
    env = {**os.environ, "RAGMETER_HOME": str(tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-c", code, str(path), *flags], capture_output=True,
                          text=True, env=env, check=True)
    assert "EXIT 0" in proc.stderr
    return proc, set(proc.stderr.split())


def test_ten_row_score_imports_nothing_heavy(tmp_path: Path) -> None:
    proc, loaded = _score_in_subprocess(tmp_path, 12)
    found = sorted(m for m in loaded for h in HEAVY if m == h or m.startswith(h + "."))
    assert found == [], found
    assert "Multilingual QA (LBRAG metrics)" in proc.stdout and "direct (baseline)" in proc.stdout
    # the default run record was written, through the columnar items
    assert "ragmeter.runs._columns" in loaded
    assert len(list((tmp_path / "home" / "runs").glob("*.items.jsonl.gz"))) == 1


def test_columnar_score_does_not_import_pandas(tmp_path: Path) -> None:
    """A file over 1 MiB goes the columnar (Arrow) way; reading numbers from Arrow must not pull
    in pandas (pyarrow's to_numpy imports it: ~0.3 s of every big score)."""
    _, loaded = _score_in_subprocess(tmp_path, 8000, "--no-record")
    assert "pyarrow.json" in loaded  # the columnar path ran
    assert "pandas" not in loaded


@pytest.mark.parametrize("values", [[1.5, None, 2.0, None, 0.25], [3.0, 4.0], [None, None],
                                    [7, 8, 9]])
def test_numpy_from_arrow_buffers_equals_pyarrows(values: list) -> None:
    """fast._numpy reads float64/int Arrow arrays from their buffers (nulls -> NaN), with the
    same result as pyarrow's to_numpy, also for a sliced array (non-zero offset)."""
    import numpy as np
    import pyarrow as pa

    from ragmeter.multilingual._fast import _numpy

    typ = pa.int64() if all(isinstance(v, int) for v in values) else pa.float64()
    arr = pa.array(values + values, type=typ)
    for piece in (arr, arr.slice(1, len(values)), pa.chunked_array([arr.slice(0, 1),
                                                                    arr.slice(1)])):
        expected = (piece.combine_chunks() if hasattr(piece, "combine_chunks")
                    else piece).to_numpy(zero_copy_only=False)
        np.testing.assert_array_equal(_numpy(piece), expected)


@pytest.fixture
def both_paths(monkeypatch: pytest.MonkeyPatch):
    """Score rows twice: small-batch reference functions forced, then numpy forms forced."""
    import ragmeter.multilingual._aggregate as aggregate
    import ragmeter.multilingual._scorer as scorer
    from ragmeter.io import iter_rows
    from ragmeter.multilingual._score import score_rows
    from ragmeter.multilingual._scorer import MultilingualConfig

    def run(rows: list[dict], **options):
        out = []
        for small in (10**9, 0):
            monkeypatch.setattr(scorer, "SMALL_BATCH", small)
            monkeypatch.setattr(aggregate, "SMALL_BATCH", small)
            monkeypatch.setattr(stats, "SMALL", small)
            res = score_rows(iter_rows(rows, component="multilingual"),
                             MultilingualConfig(**options))
            out.append((res.to_json(), list(res.iter_items())))
        return out

    return run


@pytest.mark.parametrize("options", [{}, {"keep_text": True, "baseline": "multi"}])
def test_small_path_equals_numpy_path(both_paths, options) -> None:
    (small_json, small_items), (np_json, np_items) = both_paths(_rows(600), **options)
    assert small_json == np_json  # exact: the same floats, not approximately
    assert small_items == np_items
    assert small_json["coverage"]["unscored"] > 0


def test_lbrag_run_small_path_equals_numpy_path(both_paths) -> None:
    from tests.conftest import shared

    path = shared("lbrag", "20251214_2145", "20251214_2145_answers.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    (small_json, small_items), (np_json, np_items) = both_paths(rows)
    assert small_json == np_json
    assert small_items == np_items


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), max_size=40))
def test_mean_std_python_equals_numpy(values: list[float]) -> None:
    import numpy as np

    python = (stats.mean(values), stats.sample_std(values))
    saved = stats.SMALL
    try:
        stats.SMALL = 0
        numpy_ = (stats.mean(np.asarray(values)), stats.sample_std(np.asarray(values)))
    finally:
        stats.SMALL = saved
    assert python == numpy_


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1),
                          st.one_of(st.just(0.0), st.just(math.nan),
                                    st.floats(0, 1e4, allow_nan=False))), max_size=30))
def test_cnbe_equals_cnbe_many(rows: list[tuple[float, float, float]]) -> None:
    one = [cnbe(f, b, c) for f, b, c in rows]
    many = cnbe_many([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]).tolist()
    assert [None if v != v else v for v in one] == [None if v != v else v for v in many]


@pytest.mark.parametrize("n_scored", [0, 1, 5, 99, 100, 101, 199, 200, 201, 399, 400, 401,
                                      1000, 4097, 12345])
@pytest.mark.parametrize("max_items", [1, 7, 50, 100])
@pytest.mark.parametrize("n_unscored", [0, 3, 60])
def test_scored_positions_equal_cap_items(n_scored: int, max_items: int,
                                          n_unscored: int) -> None:
    items = ([{"status": "unscored", "i": -k} for k in range(n_unscored)]
             + [{"status": "ok", "i": k} for k in range(n_scored)])
    kept, _, _, _ = _cap_items(items, max_items)
    want = [it["i"] for it in kept if it["status"] == "ok"]
    room = max_items - min(n_unscored, max_items)
    assert list(scored_positions(n_scored, room, max_items)) == want


@pytest.mark.parametrize("max_items", [50, 100_000])
def test_record_from_columns_equals_record_from_dicts(tmp_path: Path, max_items: int) -> None:
    import gzip

    import ragmeter.multilingual

    result = ragmeter.multilingual.score(_rows(4000), keep_text=False)
    columns = result.record_items()
    assert type(columns).__name__ == "ItemColumns"
    files = []
    for name, items in (("columns", columns), ("dicts", list(result.iter_items()))):
        fields, target = write_run("multilingual", result.summary, items,
                                   runs_dir_override=tmp_path / name, max_items=max_items)
        files.append(target.parent / f"{fields['run_id']}.items.jsonl.gz")
        assert fields["items_total"] == 4000 and fields["items_unscored"] > 0
    assert read_items(files[0]) == read_items(files[1])
    # the same blocks, byte for byte once decompressed
    assert gzip.decompress(files[0].read_bytes()) == gzip.decompress(files[1].read_bytes())
    if max_items > 4000:
        assert read_items(files[0]) == [*(i for i in result.items if i["status"] != "ok"),
                                        *(i for i in result.items if i["status"] == "ok")]


def test_plain_table_draws_like_rich() -> None:
    import io

    from rich.console import Console
    from rich.table import Table

    from ragmeter.reports.plain import box_table

    columns = [("system", "left"), ("EM", "right"), ("n", "right")]
    rows = [["direct (baseline)", "0.5000 ±0.1000\n[0.100, 0.900]", "3"],
            ["系统 [bold]x[/]", "1.0000", "12"]]
    table = Table(title="Multilingual QA (LBRAG metrics)", title_justify="left")
    for name, justify in columns:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    buf = io.StringIO()
    Console(file=buf, width=200, markup=False, highlight=False, emoji=False,
            color_system=None).print(table)
    want = [line.rstrip() for line in buf.getvalue().splitlines()]
    assert box_table("Multilingual QA (LBRAG metrics)", columns, rows).splitlines() == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), max_size=40))
def test_mean_std_equals_mean_and_sample_std(values: list[float]) -> None:
    want = (stats.mean(values), stats.sample_std(values))
    assert stats.mean_std(values) == want
    saved = stats.SMALL
    try:
        stats.SMALL = 0  # the numpy form, as for a big system
        if values:
            assert stats.mean_std(values) == want
    finally:
        stats.SMALL = saved


_TEXTS = st.sampled_from(["", "a", "the river", "river", "東京", "東 京", "a b a", "b a", "Paris"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_TEXTS, _TEXTS, st.sampled_from(["en", "ja", "zh", "de"])),
                max_size=20))
def test_answer_batches_equal_their_functions(rows: list[tuple[str, str, str]]) -> None:
    """The ``answer`` metrics' column forms (1.0 without a call for identical answers) give
    the per-row function's values exactly."""
    from ragmeter.multilingual._metrics import ROWS

    preds, golds, langs = ([r[k] for r in rows] for k in range(3))
    same = [p == g for p, g in zip(preds, golds, strict=True)]
    for m in ROWS:
        if m.row == "answer":
            assert m.batch is not None and m.fn is not None
            assert list(m.batch(preds, golds, langs, same)) == [m.fn(*r) for r in rows], m.name


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(min_value=0.0, max_value=1.0),
                          st.sampled_from([0.6, 0.5999999999999999, 0.6000000000000001,
                                           float("nan")])), max_size=40))
def test_of_metric_batches_equal_their_functions(values: list[float]) -> None:
    """An ``of:`` metric's numpy form (RLC_OK over a float64 array) gives its per-value
    function's values exactly, the threshold's neighbours and NaN included."""
    import numpy as np

    from ragmeter.multilingual._metrics import ROWS

    for m in ROWS:
        if m.of is not None and m.batch is not None:
            assert m.fn is not None
            got = m.batch(np.array(values, dtype=np.float64)).tolist()
            assert got == [m.fn(v) for v in values], m.name
