"""Run records (ragmeter.runs._records): writing, reading by id/prefix/path, listing, capping and
forward-compatible reading.  The golden file golden/run_v1_minimal.json is a schema-1 record
written by hand from the documented layout; it must stay readable."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.errors import InputError, UnknownNameError
from ragmeter.runs._records import (
    RUN_SCHEMA_VERSION,
    InputFile,
    _cap_items,
    list_runs,
    load_run,
    new_run_id,
    prune_runs,
    read_items,
    record_run,
    runs_dir,
)

GOLDEN = Path(__file__).parent / "golden"


def test_record_round_trip(tmp_path: Path) -> None:
    data = tmp_path / "in.jsonl"
    data.write_text('{"a": 1}\n', encoding="utf-8")
    rec = record_run("multilingual", {"signature": "sig|x", "metrics": {"s": {"f1": 0.5}}},
                     [{"id": "1", "status": "ok", "f1": 0.5},
                      {"id": "2", "status": "unscored", "reason": "missing_prediction"}],
                     inputs=[InputFile.of(data, rows=1)], command=["ragmeter", "x"],
                     models=["m"], prompt_versions={"judge": "v1"}, runs_dir_override=tmp_path)
    assert rec.path == tmp_path / f"{rec.run_id}.json"
    doc = json.loads(rec.path.read_text(encoding="utf-8"))
    assert doc["schema_version"] == RUN_SCHEMA_VERSION
    assert doc["signature"] == "sig|x"
    # sha256 of b'{"a": 1}\n' (computed with hashlib by hand)
    assert doc["inputs"][0]["sha256"] == InputFile.of(data).sha256
    assert len(doc["inputs"][0]["sha256"]) == 64 and doc["inputs"][0]["rows"] == 1
    assert "items" not in doc and doc["items_file"] == f"{rec.run_id}.items.jsonl.gz"
    items = read_items(tmp_path / doc["items_file"])  # gzip JSON Lines beside the summary
    assert [i["id"] for i in items] == ["2", "1"]  # unscored first
    again = load_run(rec.run_id, runs_dir_override=tmp_path)
    assert again.result == rec.result and again.items == rec.items
    assert load_run(rec.path).run_id == rec.run_id
    assert load_run("latest", runs_dir_override=tmp_path).run_id == rec.run_id
    assert load_run(rec.run_id[:20], runs_dir_override=tmp_path).run_id == rec.run_id


def test_default_runs_dir_is_under_ragmeter_home(_isolated_home: Path) -> None:
    assert runs_dir() == _isolated_home / "runs"
    rec = record_run("reliability", {}, [], command=["ragmeter"])
    assert rec.path is not None and rec.path.parent == _isolated_home / "runs"
    assert [r.run_id for r in list_runs()] == [rec.run_id]


def test_run_ids_sort_by_time() -> None:
    a = new_run_id("rgb", datetime(2025, 1, 1, 0, 0, 0, 5000, tzinfo=timezone.utc))
    b = new_run_id("multilingual", datetime(2025, 1, 1, 0, 0, 0, 6000, tzinfo=timezone.utc))
    c = new_run_id("a", datetime(2026, 1, 1, tzinfo=timezone.utc))
    assert sorted([c, b, a]) == [a, b, c]
    assert a.startswith("20250101T000000005Z-rgb-")


def test_list_runs_filters_by_family(tmp_path: Path) -> None:
    ids = [record_run(f, {}, [], command=[], runs_dir_override=tmp_path).run_id
           for f in ("rgb", "trace", "rgb")]
    assert [r.run_id for r in list_runs(runs_dir_override=tmp_path)] == sorted(ids)
    assert {r.family for r in list_runs(runs_dir_override=tmp_path, family="rgb")} == {"rgb"}
    assert list_runs(runs_dir_override=tmp_path / "none") == []


def test_golden_v1_record_is_readable() -> None:
    rec = load_run(GOLDEN / "run_v1_minimal.json")
    assert rec.family == "multilingual" and rec.items_total == 2
    assert rec.result["metrics"]["direct"]["f1"] == 0.5


def test_newer_schema_and_unknown_fields_are_read_with_a_note(tmp_path: Path) -> None:
    doc = json.loads((GOLDEN / "run_v1_minimal.json").read_text(encoding="utf-8"))
    doc.update(schema_version=RUN_SCHEMA_VERSION + 1, future_field={"x": 1})
    path = tmp_path / "future.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    rec = load_run(path)
    assert rec.model_extra == {"future_field": {"x": 1}}
    assert any("schema 2" in n for n in rec.notes)


@pytest.mark.parametrize(("content", "expected"), [
    ("not json", "is not JSON"),
    ("[1, 2]", "is not a run record"),
    ('{"family": "x"}', "is not a run record"),
    ('{"run_id": "r", "family": "x", "created_at": "t", "items": 3}', 'field "items"'),
])
def test_bad_record_files_name_file_and_problem(tmp_path: Path, content: str,
                                                expected: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_run(path)
    assert expected in str(err.value) and "bad.json" in str(err.value)
    assert "Fix:" in str(err.value)


def test_unknown_and_ambiguous_ids(tmp_path: Path) -> None:
    with pytest.raises(UnknownNameError):
        load_run("nope", runs_dir_override=tmp_path)
    now = datetime(2025, 1, 1, tzinfo=timezone.utc)
    for suffix in ("a", "b"):
        (tmp_path / f"{new_run_id('x', now)}{suffix}.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="matches 2 runs"):
        load_run("2025", runs_dir_override=tmp_path)


item_lists = st.lists(st.sampled_from(["ok", "unscored"]), max_size=60)


@settings(max_examples=60, deadline=None)
@given(statuses=item_lists, cap=st.integers(min_value=0, max_value=40))
def test_capping_keeps_unscored_first_and_true_counts(statuses: list[str], cap: int) -> None:
    items = [{"id": str(i), "status": s} for i, s in enumerate(statuses)]
    kept, total, n_unscored, truncated = _cap_items(items, cap)
    assert total == len(items) and n_unscored == statuses.count("unscored")
    assert len(kept) == min(cap, len(items))
    assert truncated == (len(items) > cap)
    first_ok = next((i for i, it in enumerate(kept) if it["status"] == "ok"), len(kept))
    assert all(it["status"] == "ok" for it in kept[first_ok:])  # unscored come first
    assert len({it["id"] for it in kept}) == len(kept)  # no item twice
    assert sum(1 for it in kept if it["status"] == "unscored") == min(n_unscored, cap)


def test_capped_record_says_so(tmp_path: Path) -> None:
    rec = record_run("x", {}, [{"id": str(i), "status": "ok"} for i in range(10)],
                     command=[], runs_dir_override=tmp_path, max_items=4)
    assert rec.items_truncated and rec.items_total == 10 and len(rec.items) == 4
    # evenly spaced: 10 items exceed 2 * 4, so every 2nd was sampled (0 2 4 6 8) and 4 of
    # those are taken evenly
    assert [it["id"] for it in rec.items] == ["0", "2", "4", "6"]
    assert any("capped" in n for n in rec.notes)
    exact = record_run("x", {}, [{"id": str(i), "status": "ok"} for i in range(8)],
                       command=[], runs_dir_override=tmp_path, max_items=4)
    assert [it["id"] for it in exact.items] == ["0", "2", "4", "6"]  # every len/room-th


def test_retention_keeps_the_newest_runs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAGMETER_KEEP_RUNS", "2")
    ids = [record_run("x", {}, [{"id": "1", "status": "ok"}], command=[],
                      runs_dir_override=tmp_path).run_id for _ in range(4)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"{i}.json" for i in ids[2:]] + [f"{i}.items.jsonl.gz" for i in ids[2:]])
    monkeypatch.setenv("RAGMETER_KEEP_RUNS", "0")  # 0 keeps everything
    record_run("x", {}, [], command=[], runs_dir_override=tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 3
    assert prune_runs(keep=1, runs_dir_override=tmp_path, dry_run=True) == ids[2:]
    assert len(list(tmp_path.glob("*.json"))) == 3
    assert prune_runs(keep=1, runs_dir_override=tmp_path) == ids[2:]
    assert len(list(tmp_path.glob("*"))) == 2


def test_sampling_holds_bounded_memory_and_exact_counts() -> None:
    items = ({"id": str(i), "status": "unscored" if i % 1000 == 0 else "ok"}
             for i in range(100_000))
    kept, total, n_unscored, truncated = _cap_items(items, 50)
    assert total == 100_000 and n_unscored == 100 and truncated
    assert len(kept) == 50 and all(it["status"] == "unscored" for it in kept)
    kept, *_ = _cap_items(({"id": i, "status": "ok"} for i in range(100_000)), 50)
    ids = [it["id"] for it in kept]
    assert len(ids) == 50 and ids == sorted(ids) and ids[0] == 0 and ids[-1] > 90_000
