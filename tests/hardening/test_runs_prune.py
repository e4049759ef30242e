"""``runs prune`` removes orphaned items files (issue 29.12): an items file whose summary is
gone (the process was killed between the two writes, or the summary was deleted by hand) holds
prompts and replies and was never removed.  Now ``runs prune``, and the retention pass after
every new record, remove it once it is an hour old; a younger one may be a record being
written and is left alone."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ragmeter.runs import prune_runs, record_run
from ragmeter.runs._records import ITEMS_SUFFIX, ORPHAN_GRACE_S


def _records(folder: Path, n: int) -> list[str]:
    return [record_run("x", {}, [{"id": str(i), "status": "ok"}], command=[],
                       runs_dir_override=folder).run_id for i in range(n)]


def _orphan(folder: Path, run_id: str, age_s: float) -> Path:
    (folder / f"{run_id}.json").unlink()
    items = folder / f"{run_id}{ITEMS_SUFFIX}"
    then = time.time() - age_s
    os.utime(items, (then, then))
    return items


def test_runs_prune_removes_an_old_orphaned_items_file(tmp_path, run_cli):
    ids = _records(tmp_path, 3)
    old = _orphan(tmp_path, ids[0], ORPHAN_GRACE_S + 60)
    young = _orphan(tmp_path, ids[1], 5)  # may be a record being written: kept
    code, out, err = run_cli("runs", "prune", "--keep", "0", "--runs-dir", tmp_path, "--dry-run")
    assert code == 0 and out.split() == ["would", "remove", ids[0]] and old.exists(), err
    code, out, err = run_cli("runs", "prune", "--keep", "0", "--runs-dir", tmp_path)
    assert code == 0 and out.split() == ["removed", ids[0]], err
    assert not old.exists() and young.exists()
    assert (tmp_path / f"{ids[2]}.json").exists()                  # a whole record is kept
    assert (tmp_path / f"{ids[2]}{ITEMS_SUFFIX}").exists()


def test_the_retention_after_a_new_record_removes_orphans_too(tmp_path):
    ids = _records(tmp_path, 2)
    old = _orphan(tmp_path, ids[0], ORPHAN_GRACE_S + 1)
    _records(tmp_path, 1)
    assert not old.exists()
    assert len(list(tmp_path.glob("*.json"))) == 2
    assert len(list(tmp_path.glob(f"*{ITEMS_SUFFIX}"))) == 2


def test_orphans_and_old_records_together_oldest_first(tmp_path):
    ids = _records(tmp_path, 4)
    _orphan(tmp_path, ids[2], ORPHAN_GRACE_S * 2)
    assert prune_runs(keep=1, runs_dir_override=tmp_path) == ids[:3]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"{ids[3]}.json", f"{ids[3]}{ITEMS_SUFFIX}"])


def test_run_ids_made_in_a_row_sort_in_creation_order():
    # 200 ids take well under a millisecond each: before, ids of one millisecond sorted by
    # their random suffix, and pruning (oldest first, by id) removed them in that order
    from ragmeter.runs._records import new_run_id

    ids = [new_run_id("x") for _ in range(200)]
    assert ids == sorted(ids)
    assert len({run_id.split("-")[0] for run_id in ids}) == 200  # no stamp given twice


def test_records_made_in_a_row_are_pruned_oldest_first(tmp_path):
    # the records' own ids (record_run stamps them itself): the same rule through the
    # write path the prune test above uses
    for _ in range(5):
        ids = _records(tmp_path, 30)
        assert ids == sorted(ids) and len({i.split("-")[0] for i in ids}) == 30
        assert prune_runs(keep=1, runs_dir_override=tmp_path) == ids[:-1]  # the newest kept
        (tmp_path / f"{ids[-1]}.json").unlink()
        (tmp_path / f"{ids[-1]}{ITEMS_SUFFIX}").unlink()
