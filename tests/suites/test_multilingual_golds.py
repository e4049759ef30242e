"""Several gold answers (max over them, as SQuAD v1.1's evaluate script) and SQuAD
normalization beside LBRAG's (issue 15, item 6)."""

from __future__ import annotations

import json

import pytest

import ragmeter
from ragmeter.text._normalize import normalize_squad, normalize_text


@pytest.mark.parametrize(("text", "squad", "lbrag"), [
    # SQuAD v1.1 normalize_answer: lower, drop ASCII punctuation, drop a/an/the, single spaces
    ("The Eiffel Tower!", "eiffel tower", "the eiffel tower"),
    ("an apple, a day", "apple day", "an apple a day"),
    ("Theater", "theater", "theater"),                 # "the" only as a whole word
    ("  U.S.A.  ", "usa", "u s a"),                    # punctuation removed, not spaced
    ("北京。", "北京。", "北京"),                        # CJK punctuation is not ASCII
])
def test_normalizers(text: str, squad: str, lbrag: str) -> None:
    assert normalize_squad(text) == squad
    assert normalize_text(text) == lbrag


def _row(sid: str, gold, pred: str, lang: str = "en") -> dict:
    return {"sample_id": sid, "sample_lang": lang, "system": "s", "gold_answer": gold,
            "pred_answer": pred}


def test_max_over_golds_for_em_and_f1() -> None:
    rows = [_row("1", ["Paris", "City of Paris"], "city of paris"),      # EM via the 2nd gold
            _row("2", ["Mount Everest", "Everest"], "everest peak"),     # F1 max(0.5, 0.667)
            _row("3", "Berlin", "Berlin")]
    result = ragmeter.multilingual.score(rows)
    items = {i["sample_id"]: i for i in result.items}
    assert items["1"]["em"] == 1.0 and items["1"]["f1"] == 1.0
    assert items["2"]["em"] == 0.0
    assert items["2"]["f1"] == pytest.approx(2 / 3)  # vs "everest": p=1/2, r=1 -> 2/3
    assert items["3"]["em"] == 1.0
    assert items["1"]["gold_answer"] == ["Paris", "City of Paris"]


def test_single_gold_list_equals_string() -> None:
    a = ragmeter.multilingual.score([_row("1", ["the answer"], "an answer")])
    b = ragmeter.multilingual.score([_row("1", "the answer", "an answer")])
    assert a.summary == b.summary


def test_squad_normalization_changes_em_and_signature(run_cli, tmp_path) -> None:
    rows = [_row("1", "The Eiffel Tower", "Eiffel Tower"), _row("2", "a cat", "the cat")]
    lbrag = ragmeter.multilingual.score(rows)
    squad = ragmeter.multilingual.score(rows, normalize="squad")
    assert lbrag.summary["metrics"]["s"]["em"] == 0.0
    assert squad.summary["metrics"]["s"]["em"] == 1.0
    assert "norm:lbrag" in lbrag.signature and "norm:squad" in squad.signature
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "m.json"
    code, _, err = run_cli("multilingual", "score", path, "--normalize", "squad", "--json", out,
                           "--no-record")
    assert code == 0, err
    assert json.loads(out.read_text())["metrics"] == squad.summary["metrics"]


def test_empty_gold_list_is_an_error(run_cli, tmp_path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(_row("1", [], "x")) + "\n")
    code, _, err = run_cli("multilingual", "score", path, "--no-record")
    assert code == 2 and 'line 1 of' in err and 'field "gold_answer": is an empty list' in err


def test_by_group_scores_each_group_like_a_separate_run(run_cli, tmp_path) -> None:
    rows = [_row("1", "Paris", "Paris"), _row("2", "Rom", "Berlin", "de"),
            _row("3", "Bonn", "Bonn", "de"), _row("4", "Oslo", "Oslo")]
    for r, ds in zip(rows, ["a", "b", "a", "b"], strict=True):
        r["dataset"] = ds
    result = ragmeter.multilingual.score(rows, by="lang", ci=True, resamples=200)
    groups = result.summary["groups"]
    assert groups["by"] == "sample_lang" and set(groups["values"]) == {"de", "en"}
    de_alone = ragmeter.multilingual.score([r for r in rows if r["sample_lang"] == "de"],
                                           ci=True, resamples=200)
    assert groups["values"]["de"]["metrics"] == de_alone.summary["metrics"]
    assert groups["values"]["de"]["metrics"]["s"]["em"] == 0.5
    assert groups["values"]["en"]["coverage"]["rows"] == 2
    by_ds = ragmeter.multilingual.score(rows, by="dataset").summary["groups"]["values"]
    assert by_ds["a"]["metrics"]["s"]["em"] == 1.0 and by_ds["b"]["metrics"]["s"]["em"] == 0.5
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = run_cli("multilingual", "score", path, "--by", "dataset", "--no-record")
    assert code == 0, err
    assert "By dataset" in out
    code, _, err = run_cli("multilingual", "score", path, "--by", "nosuch", "--no-record")
    assert code == 2 and 'field "nosuch": is missing' in err
