"""The Python API's input shapes (issue 29.9): validated once in ``ragmeter.io`` (and the verb
kit), each input read once.  A DataFrame with two columns of one name was silently collapsed;
a generator was read twice when ``by=`` was given (the second pass saw nothing);
``rubric.score(by="lang")`` split the string into characters; ``rubric.build(DataFrame)``
treated the column names as paths; reliability's ``to_pandas()`` was not in input order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragmeter
from ragmeter.errors import ConfigError, InputError
from ragmeter.io._samples import sample_path

pd = pytest.importorskip("pandas")


def _rows(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".csv":
        import csv

        return list(csv.DictReader(text.splitlines()))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# ------------------------------------------------------------------ duplicated column names

@pytest.mark.parametrize("kind", ["DataFrame", "Arrow"])
def test_a_table_with_two_columns_of_one_name_is_refused(kind):
    frame = pd.DataFrame([["s1", "en", "direct", "Ottawa", "Ottawa", "Paris"]],
                         columns=["sample_id", "sample_lang", "system", "gold_answer",
                                  "pred_answer", "pred_answer"])
    data: object = frame
    if kind == "Arrow":
        pa = pytest.importorskip("pyarrow")
        data = pa.Table.from_arrays([pa.array(frame.iloc[:, i]) for i in range(6)],
                                    names=list(frame.columns))
    with pytest.raises(InputError, match='has two columns named "pred_answer"'):
        ragmeter.multilingual.score(data)


def test_column_names_that_collide_as_text_are_refused():
    frame = pd.DataFrame([[1, 2]], columns=[1, "1"])
    with pytest.raises(InputError, match='has two columns named "1"'):
        ragmeter.generate(frame, dry_run=True)


# ------------------------------------------------------------------ a generator, read once

def _same(a: ragmeter.Result, b: ragmeter.Result) -> None:
    assert a.summary.get("groups") and a.summary["groups"] == b.summary["groups"]
    assert a.headline == b.headline


MULTI = _rows(sample_path("multilingual_answers.jsonl"))
TRACE = [{**r, "dataset_name": f"d{i % 2}"}
         for i, r in enumerate(_rows(sample_path("trace_labelled.jsonl")))]
RELIABILITY = _rows(sample_path("reliability_annotations.csv"))


@pytest.mark.parametrize(("verb", "rows", "kwargs"), [
    ("multilingual.score", MULTI, {"by": "lang"}),
    ("trace.score", TRACE, {"by": "dataset_name"}),
    ("trace.validate", TRACE, {"by": "dataset_name",
                               "pred_columns": {"adherence": "adherence_score"}}),
    ("reliability.score", RELIABILITY, {"by": "evaluator", "qc": "qc_maria"}),
])
def test_a_generator_with_by_gives_the_list_s_numbers(verb, rows, kwargs):
    family, name = verb.split(".")
    fn = getattr(getattr(ragmeter, family), name)
    if verb == "trace.validate" and "adherence_score" not in rows[0]:
        rows = [{**r, "adherence_score": 0.1 * (i % 10)} for i, r in enumerate(rows)]
    _same(fn((dict(r) for r in rows), **kwargs), fn(list(rows), **kwargs))


def test_rgb_score_with_generators_and_by():
    """``model`` is only in the predictions: the groups read them a second time."""
    data = _rows(sample_path("rgb_en.jsonl"))[:6]
    preds = [{"id": r["id"], "prediction": "I can not answer the question",
              "model": f"m{i % 2}"} for i, r in enumerate(data)]
    kwargs = {"noise_rate": 0.0, "by": "model"}
    a = ragmeter.rgb.score((dict(p) for p in preds), data=(dict(d) for d in data), **kwargs)
    b = ragmeter.rgb.score(list(preds), data=list(data), **kwargs)
    assert sorted(b.summary["groups"]["values"]) == ["m0", "m1"]
    _same(a, b)


def test_an_iterator_read_twice_says_so():
    from ragmeter.io import read_rows

    rows = iter([{"a": 1}])
    assert len(read_rows(rows)) == 1  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"has no rows \(an iterator is empty once it was "
                                         r"read\).*pass a list"):
        read_rows(rows)  # type: ignore[arg-type]


# ------------------------------------------------------------------ names, not characters

RUBRIC_ROWS = [{"id": str(i), "question": "q", "score": i % 6, "lang": "en" if i % 2 else "de",
                "model_name": "m"} for i in range(12)]


def test_by_one_column_name_is_that_column():
    one = ragmeter.rubric.score(RUBRIC_ROWS, by="lang", ci=False).summary
    listed = ragmeter.rubric.score(RUBRIC_ROWS, by=["lang"], ci=False).summary
    assert one == listed
    assert set(json.dumps(one)) and "'l'" not in json.dumps(one)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"by": 3}, "by= takes a column name or a list of column names, got int"),
    ({"by": ["lang", 3]}, "by= takes a column name or a list of column names, got a list "
                          "holding int"),
])
def test_by_of_another_type_is_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ragmeter.rubric.score(RUBRIC_ROWS, **kwargs)


def test_reliability_flag_words_are_words():
    """``flag_yes="Yes"`` is the word Yes, not the letters Y, e, s."""
    a = ragmeter.reliability.score(RELIABILITY, qc="qc_maria", flag_yes="Yes", flag_no="No")
    b = ragmeter.reliability.score(RELIABILITY, qc="qc_maria", flag_yes=["Yes"],
                                   flag_no=["No"])
    assert a.summary == b.summary


def test_fields_as_one_string_is_one_mapping():
    rows = [{**r, "answer": r["pred_answer"]} for r in MULTI]
    for r in rows:
        del r["pred_answer"]
    a = ragmeter.multilingual.score(rows, fields="pred_answer=answer")
    b = ragmeter.multilingual.score(rows, fields=["pred_answer=answer"])
    assert a.summary == b.summary


# ------------------------------------------------------------------ rubric.build's paths

@pytest.mark.parametrize("value", [
    pytest.param(lambda: pd.DataFrame({"kb.md": ["text"]}), id="DataFrame"),
    pytest.param(lambda: [{"path": "kb.md"}], id="list of dicts"),
    pytest.param(lambda: 3, id="int"),
])
def test_rubric_build_takes_paths_only(value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kb.md").write_text("# A\n\nSome text about a topic.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="knowledge_base= takes a path or a list of paths"):
        ragmeter.rubric.build(value(), dry_run=True)


def test_rubric_build_reads_a_generator_of_paths_once(tmp_path):
    kb = tmp_path / "kb.md"
    kb.write_text("# A\n\n" + "Some text about a topic. " * 20 + "\n", encoding="utf-8")
    a = ragmeter.rubric.build((p for p in [kb]), dry_run=True)
    b = ragmeter.rubric.build([kb], dry_run=True)
    assert a.summary == b.summary and a.summary["calls"] > 0


# ------------------------------------------------------------------ input order

def test_reliability_items_are_in_input_order():
    result = ragmeter.reliability.score(sample_path("reliability_annotations.csv"),
                                        qc="qc_maria")
    frame = result.to_pandas()
    expected = [(r["item_id"], r["evaluator"]) for r in RELIABILITY
                if r["evaluator"] != "qc_maria"]
    assert list(zip(frame["item_id"], frame["evaluator"], strict=True)) == expected
    # --items and the run record keep the family's grouping (by evaluator), as before
    assert [i["evaluator"] for i in result.items] == sorted(
        (i["evaluator"] for i in result.items),
        key=[i["evaluator"] for i in result.items].index)
