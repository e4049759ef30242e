"""One null baseline prediction (issue 29.10) used to abort a whole ``multilingual score``
with a false "no row of the baseline" message.  Now that row is an unscored item
(``missing_prediction``), its partners in the other systems keep their EM/F1/RLC/cost and get
no CNBE (said in a note), and every other row scores as before.  A sample that really has no
baseline row is still an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragmeter
from ragmeter.errors import InputError


def _rows(n: int) -> list[dict]:
    """n samples answered by the baseline ``direct`` and by ``lbrag`` (costlier, better)."""
    out = []
    for i in range(n):
        gold = f"answer {i}"
        out.append({"sample_id": f"s{i}", "sample_lang": "en", "system": "direct",
                    "gold_answer": gold, "pred_answer": gold if i % 3 else "wrong",
                    "translate_tokens": 0})
        out.append({"sample_id": f"s{i}", "sample_lang": "en", "system": "lbrag",
                    "gold_answer": gold, "pred_answer": gold, "translate_tokens": 10 + i % 7})
    return out


@pytest.mark.parametrize("n", [6, 300])  # 300: the vectorized (numpy) path, >= SMALL_BATCH
def test_a_null_baseline_prediction_is_one_unscored_item(n):
    rows = _rows(n)
    rows[2]["pred_answer"] = None  # the baseline's answer to s1
    result = ragmeter.multilingual.score(rows)
    by_key = {(i["system"], i["sample_id"]): i for i in result.items}
    assert by_key[("direct", "s1")]["status"] == "unscored"
    assert by_key[("direct", "s1")]["reason"] == "missing_prediction"
    partner = by_key[("lbrag", "s1")]
    assert partner["status"] == "ok" and partner["em"] == 1.0 and partner["cnbe"] is None
    assert result.coverage["unscored"] == 1 and result.coverage["rows"] == 2 * n
    assert any("1 row(s) have no CNBE" in note and "'s1'" in note
               for note in result.summary["notes"])

    # Every other number is what it is without the sample s1 (CNBE) or without the null row
    # (the rest): nothing else changed.
    without_s1 = ragmeter.multilingual.score([r for r in rows if r["sample_id"] != "s1"])
    without_null = [r for r in rows if r["pred_answer"] is not None]
    alone = ragmeter.multilingual.score(without_null, baseline="lbrag")  # no CNBE vs direct
    lbrag, direct = (result.summary["metrics"][s] for s in ("lbrag", "direct"))
    assert lbrag["cnbe"] == pytest.approx(without_s1.summary["metrics"]["lbrag"]["cnbe"])
    assert lbrag["cnbe_n"] == n - 1
    for metric in ("em", "f1", "rlc", "cost"):
        assert lbrag[metric] == alone.summary["metrics"]["lbrag"][metric]
        assert direct[metric] == alone.summary["metrics"]["direct"][metric]


def test_the_cli_scores_and_writes_every_item(tmp_path, run_cli):
    rows = _rows(4)
    rows[0]["pred_answer"] = None
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    items = tmp_path / "items.jsonl"
    code, out, err = run_cli("multilingual", "score", path, "--items", items, "--paired",
                             "--no-record")
    assert code == 0, err
    written = [json.loads(line) for line in Path(items).read_text().splitlines()]
    assert len(written) == 8 and sum(i["status"] == "unscored" for i in written) == 1
    assert "have no CNBE" in out + err


def test_a_sample_without_any_baseline_row_is_still_an_error():
    rows = [r for r in _rows(4) if not (r["system"] == "direct" and r["sample_id"] == "s1")]
    with pytest.raises(InputError, match="1 sample_id.* with no row of the baseline system "
                                         "'direct', first 's1'"):
        ragmeter.multilingual.score(rows)
