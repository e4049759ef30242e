"""``multilingual score --engine ray`` on a real two-node local Ray cluster
(``ray.cluster_utils.Cluster``, one CPU per node, 127.0.0.1): Parquet shards scored on the
workers, aggregated on the driver, every number and item equal to one process scoring the
shards concatenated in sorted order (issue 14).  Loopback settings as in test_ray_cluster.py
(../shared/RAY.md): test settings, not product settings.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip(
    "ray", reason="ray is not installed (pip install 'ragmeter[ray]'; CI gets it from the "
                  "test extra)")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import ragmeter.multilingual  # noqa: E402
from tests.engine.local_cluster import loopback_cluster  # noqa: E402
from tests.suites.test_multilingual_speed_paths import _rows  # noqa: E402

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with loopback_cluster() as c:
        yield c


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Three Parquet shards (small row groups: several per file) and the same rows as one
    Parquet file; rows with a null prediction and with semantic scores included."""
    folder = tmp_path_factory.mktemp("shards")
    table = pa.Table.from_pylist(_rows(3000, seed=7))
    bounds = [0, 1100, 1900, table.num_rows]
    (folder / "data").mkdir()
    for k in range(3):
        part = table.slice(bounds[k], bounds[k + 1] - bounds[k])
        pq.write_table(part, folder / "data" / f"part-{k}.parquet", row_group_size=400)
    whole = folder / "whole.parquet"
    pq.write_table(table, whole)
    return folder / "data", whole


@pytest.fixture(scope="module")
def rich_shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Shards whose rows take costs from ``evidence`` (some with a null evidence: cost 0.0,
    some with a string token count) and carry a ``dataset`` column (ints, some null) to group
    by; and the same rows as one file."""
    folder = tmp_path_factory.mktemp("rich")
    rows = _rows(1200, seed=3)
    for i, row in enumerate(rows):
        sample = i // 4  # 4 systems per sample: a sample's rows share their dataset
        row["dataset"] = None if sample % 11 == 0 else sample % 3
        row["evidence"] = [{"text": "e", "metadata": {"token_count": i % 50}},
                           {"text": "f", "metadata": {"token_count": 7}}]
        if i % 4 == 1:
            row["translate_tokens"] = None  # cost from the evidence, as the row path does
        if i % 20 == 9:
            row["translate_tokens"], row["evidence"] = None, None  # cost 0.0 (row path)
    table = pa.Table.from_pylist(rows)
    (folder / "data").mkdir()
    for k, (a, b) in enumerate([(0, 500), (500, 1200)]):
        pq.write_table(table.slice(a, b - a), folder / "data" / f"p{k}.parquet",
                       row_group_size=150)
    whole = folder / "whole.parquet"
    pq.write_table(table, whole)
    return folder / "data", whole


def _same(one: Any, on_ray: Any) -> None:
    assert on_ray.signature == f"{one.signature}|engine:ray"
    assert {**on_ray.summary, "signature": one.signature} == one.summary  # exact
    assert on_ray.items == one.items


def test_evidence_costs_and_by_equal_one_process(cluster, rich_shards) -> None:
    data, whole = rich_shards
    for by, options in (("dataset", {"ci": True, "paired": True, "resamples": 100,
                                     "keep_text": True}), ("lang", {"keep_text": False})):
        one = ragmeter.multilingual.score(whole, by=by, **options)
        on_ray = ragmeter.multilingual.score(data, engine="ray", by=by, **options)
        _same(one, on_ray)
        groups = one.summary["groups"]["values"]
        expected = ({"", "0", "1", "2"} if by == "dataset"
                    else {i["sample_lang"] for i in one.items})
        assert set(groups) == expected
        assert all(("ci95" in g) == (by == "dataset") for g in groups.values())
    costs = {i["cost"] for i in one.items if i["status"] == "ok"}
    assert 0.0 in costs and 7.0 + 49 in costs  # from evidence: a null one, and 49 + 7


def test_rlc_lid_equals_one_process(cluster, rich_shards) -> None:
    pytest.importorskip("lingua")
    data, whole = rich_shards
    one = ragmeter.multilingual.score(whole, rlc_lid=True)
    on_ray = ragmeter.multilingual.score(data, engine="ray", rlc_lid=True)
    _same(one, on_ray)
    assert "rlc_lid" in one.summary["metrics"]["direct"]


def test_rows_without_any_cost_equal_one_process(cluster, tmp_path: Path) -> None:
    rows = _rows(400, seed=5)
    for i, row in enumerate(rows):
        if i % 3 == 0:
            row["translate_tokens"] = None  # no evidence column: no cost, as one process
    table = pa.Table.from_pylist(rows)
    (tmp_path / "d").mkdir()
    pq.write_table(table, tmp_path / "d" / "a.parquet", row_group_size=100)
    one = ragmeter.multilingual.score(tmp_path / "d" / "a.parquet")
    on_ray = ragmeter.multilingual.score(tmp_path / "d", engine="ray", ray_workers=1)
    _same(one, on_ray)
    assert any("neither translate_tokens nor evidence" in n for n in one.summary["notes"])


def test_by_with_rlc_lid_names_both_flags(run_cli, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    pq.write_table(pa.Table.from_pylist(_rows(8)), tmp_path / "d" / "a.parquet")
    code, _, err = run_cli("multilingual", "score", tmp_path / "d", "--engine", "ray",
                           "--by", "lang", "--rlc-lid")
    assert code == 2
    assert "--by with --rlc-lid runs in one process only" in err and "drop --engine ray" in err
    assert len(err.strip().splitlines()) == 1


def test_ray_scoring_equals_one_process(cluster, shards) -> None:
    data, whole = shards
    options = {"ci": True, "paired": True, "resamples": 200, "keep_text": True}
    one = ragmeter.multilingual.score(whole, **options)
    on_ray = ragmeter.multilingual.score(data, engine="ray", ray_workers=2, **options)
    assert on_ray.signature == f"{one.signature}|engine:ray"
    assert {**on_ray.summary, "signature": one.signature} == one.summary  # exact
    assert on_ray.items == one.items
    assert one.summary["coverage"]["unscored"] > 0 and "ci95" in one.summary
    # a glob names the same files
    by_glob = ragmeter.multilingual.score(str(data / "part-*.parquet"), engine="ray",
                                          **options)
    assert by_glob.summary == on_ray.summary


def test_cli_records_engine_ray(cluster, shards, run_cli, tmp_path: Path) -> None:
    data, _ = shards
    code, out, err = run_cli("multilingual", "score", data, "--engine", "ray",
                             "--ray-cpus-per-worker", "1", "--by", "lang",
                             "--json", tmp_path / "m.json", "--runs-dir", tmp_path / "runs")
    assert code == 0, err
    assert "engine:ray" in out
    summary = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert summary["signature"].endswith("|engine:ray")
    assert summary["groups"]["by"] == "sample_lang" and summary["groups"]["values"]
    (record,) = (tmp_path / "runs").glob("*.json")
    doc = json.loads(record.read_text(encoding="utf-8"))
    assert doc["signature"].endswith("|engine:ray") and len(doc["inputs"]) == 3


def test_bad_row_is_one_line_exit_2(cluster, run_cli, tmp_path: Path) -> None:
    rows = _rows(40)
    rows[5]["sample_lang"] = "xx-klingon"
    (tmp_path / "d").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d" / "a.parquet")
    code, _, err = run_cli("multilingual", "score", tmp_path / "d", "--engine", "ray")
    assert code == 2
    assert "'xx-klingon' is not a known language code" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
