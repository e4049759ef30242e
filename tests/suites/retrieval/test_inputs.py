"""Every shape of run and judgments gives the same numbers; bad input is one line with the
file, line and field, and exit 2 on the command line."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from ragmeter.errors import ConfigError, InputError
from ragmeter.io._samples import sample_path

RUN = sample_path("retrieval_run.jsonl")
DENSE = sample_path("retrieval_run_dense.trec")
QRELS = sample_path("retrieval_qrels.txt")
CONTEXTS = sample_path("retrieval_contexts.jsonl")


def _metrics(result: Any) -> dict[str, float]:
    return dict(result.summary["metrics"])


@pytest.fixture(scope="module")
def reference() -> dict[str, float]:
    """The dense run against the TREC qrels: every other shape must give these numbers."""
    return _metrics(ragmeter.retrieval.score(DENSE, qrels=QRELS))


def _dense_rows() -> list[tuple[str, str, int, float]]:
    out = []
    for line in DENSE.read_text(encoding="utf-8").splitlines():
        qid, _, doc, rank, score, _ = line.split()
        out.append((qid, doc, int(rank), float(score)))
    return out


def _qrels_rows() -> list[tuple[str, str, int]]:
    return [(q, d, int(g)) for q, _, d, g in
            (line.split() for line in QRELS.read_text(encoding="utf-8").splitlines())]


def _per_query(rows: list[tuple[str, str, int, float]]) -> list[dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for qid, doc, _, score in rows:
        entry = out.setdefault(qid, {"query_id": qid, "retrieved_ids": [], "scores": []})
        entry["retrieved_ids"].append(doc)
        entry["scores"].append(score)
    return list(out.values())


def _judged() -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for qid, doc, grade in _qrels_rows():
        out.setdefault(qid, {})[doc] = grade
    return out


def test_every_shape_gives_the_same_numbers(reference: dict[str, float], tmp_path: Path) -> None:
    per_query = _per_query(_dense_rows())
    long_rows = [{"query_id": q, "doc_id": d, "rank": r, "score": s}
                 for q, d, r, s in _dense_rows()]
    judged = _judged()
    combined = [{**row, "relevant_ids": judged[row["query_id"]]} for row in per_query]
    qrels_long = [{"query_id": q, "doc_id": d, "relevance": g} for q, d, g in _qrels_rows()]
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in per_query), encoding="utf-8")
    csv_file = tmp_path / "combined.csv"
    with csv_file.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["query_id", "retrieved_ids", "scores", "relevant_ids"])
        writer.writerows([r["query_id"], json.dumps(r["retrieved_ids"]), json.dumps(r["scores"]),
                          json.dumps(r["relevant_ids"])] for r in combined)
    tsv_qrels = tmp_path / "qrels.tsv"  # MS MARCO style: no header, tab separated
    tsv_qrels.write_text(QRELS.read_text(encoding="utf-8").replace(" ", "\t"), encoding="utf-8")
    shapes = {
        "rows per query": (per_query, judged),
        "rows per document": (long_rows, qrels_long),
        "one file": (combined, None),
        "dicts": ({q: dict(zip(r["retrieved_ids"], r["scores"], strict=True))
                   for q, r in ((r["query_id"], r) for r in per_query)}, judged),
        "JSONL run, TREC qrels": (jsonl, QRELS),
        "CSV with JSON cells": (csv_file, None),
        "TREC run, headerless TSV qrels": (DENSE, tsv_qrels),
        "TREC run, judgment rows": (DENSE, qrels_long),
    }
    for name, (run, qrels) in shapes.items():
        assert _metrics(ragmeter.retrieval.score(run, qrels=qrels)) == reference, name


def test_dataframes_and_arrow_tables(reference: dict[str, float]) -> None:
    pd = pytest.importorskip("pandas")
    run = pd.DataFrame(_dense_rows(), columns=["qid", "docno", "rank", "score"])
    qrels = pd.DataFrame(_qrels_rows(), columns=["qid", "docno", "label"])
    fields = {"query_id": "qid", "doc_id": "docno", "relevance": "label"}
    assert _metrics(ragmeter.retrieval.score(run, qrels=qrels, fields=fields)) == reference
    pa = pytest.importorskip("pyarrow")
    table = pa.Table.from_pandas(run)
    assert _metrics(ragmeter.retrieval.score(table, qrels=qrels, fields=fields)) == reference


def test_the_judgments_can_have_their_own_column_names(reference: dict[str, float]) -> None:
    run = [{"qid": q, "docno": d, "score": s} for q, d, _, s in _dense_rows()]
    qrels = [{"topic": q, "doc": d, "label": g} for q, d, g in _qrels_rows()]
    result = ragmeter.retrieval.score(
        run, qrels=qrels, fields={"query_id": "qid", "doc_id": "docno"},
        qrels_fields={"query_id": "topic", "doc_id": "doc", "relevance": "label"})
    assert _metrics(result) == reference
    with pytest.raises(InputError, match=r'field "query_id": is missing'):
        ragmeter.retrieval.score(run, qrels=qrels, fields={"query_id": "qid", "doc_id": "docno"})


def test_a_list_without_scores_is_ranked_as_given() -> None:
    rows = [{"query_id": "q", "retrieved_ids": ["b", "a"], "relevant_ids": ["a"]}]
    (item,) = ragmeter.retrieval.score(rows).items
    assert item["mrr"] == 0.5


def test_order_given_follows_the_rank_column_not_the_scores(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q Q0 a 2 5.0 t\nq Q0 b 1 1.0 t\n", encoding="utf-8")
    qrels = {"q": {"b": 1}}
    (trec,) = ragmeter.retrieval.score(run, qrels=qrels).items
    (given,) = ragmeter.retrieval.score(run, qrels=qrels, order="given").items
    assert (trec["mrr"], given["mrr"]) == (0.5, 1.0)
    assert "trec_eval:no (order=given)" in ragmeter.retrieval.score(
        run, qrels=qrels, order="given").signature


def test_empty_lists_mean_nothing_retrieved_or_nothing_relevant() -> None:
    rows = [{"query_id": "a", "retrieved_ids": ["x"], "relevant_ids": ["x"]},
            {"query_id": "b", "retrieved_ids": [], "relevant_ids": ["y"]},
            {"query_id": "c", "retrieved_ids": ["z"], "relevant_ids": []},
            {"query_id": "d", "retrieved_ids": ["z"], "relevant_ids": None}]
    items = {it["query_id"]: it for it in ragmeter.retrieval.score(rows).items}
    assert items["a"]["map"] == 1.0
    assert items["b"]["reason"] == "no retrieved documents"
    assert items["c"]["status"] == "ok" and items["c"]["map"] == 0.0  # judged, none relevant
    assert items["d"]["reason"] == "not in qrels"
    complete = ragmeter.retrieval.score(rows, all_queries=True)
    assert complete.summary["metrics"]["map"] == 1 / 3 and complete.summary["n"]["map"] == 3


# ------------------------------------------------------------------ context texts


def test_contexts_match_gold_passages_exactly_or_by_containment() -> None:
    rows = [{"query_id": "q", "reference": "Paris",
             "retrieved_contexts": ["Lyon is large.", "The capital is Paris. It is old.",
                                    "the CAPITAL is paris!"],
             "reference_contexts": ["The capital is Paris.", "Paris has a river."]}]
    (exact,) = ragmeter.retrieval.score(rows, k=(1, 3)).items
    (contains,) = ragmeter.retrieval.score(rows, k=(1, 3), match="contains").items
    # exact: only "the CAPITAL is paris!" equals a gold passage after normalization (rank 3)
    assert (exact["mrr"], exact["recall@3"]) == (1 / 3, 0.5)
    # contains: rank 2 holds the first gold passage; rank 3 repeats it and counts as not relevant
    assert (contains["mrr"], contains["recall@3"], contains["precision@3"]) == (0.5, 0.5, 1 / 3)
    # the answer: "paris" occurs as a word in contexts 2 and 3, not in the top 1
    assert (exact["answer_in_context@1"], exact["answer_in_context@3"]) == (0.0, 1.0)


def test_answer_found_needs_whole_words() -> None:
    rows = [{"query_id": "q", "reference": "par", "retrieved_contexts": ["Paris, par avion"]},
            {"query_id": "r", "reference": "aris", "retrieved_contexts": ["Paris"]},
            {"query_id": "s", "reference": "!!", "retrieved_contexts": ["Paris"]}]
    result = ragmeter.retrieval.score(rows, k=1)
    items = {it["query_id"]: it for it in result.items}
    assert items["q"]["answer_in_context@1"] == 1.0
    assert items["r"]["answer_in_context@1"] == 0.0
    assert items["s"]["status"] == "unscored"  # empty after normalization
    assert "empty after normalization" in result.summary["notes"][0]
    assert [h.metric for h in result.headline] == ["answer_in_context@1"]


def test_the_sample_contexts_give_the_ids_numbers_of_their_passages() -> None:
    """The contexts sample holds run A's passages as text (q04 joins two passages into one
    context): with exact matching, every query but q04 ranks as the ids do."""
    texts = {it["query_id"]: it for it in ragmeter.retrieval.score(CONTEXTS, k=5).items}
    rows = [json.loads(line) for line in RUN.read_text(encoding="utf-8").splitlines()]
    judged = {q: {d: 1 for d, g in docs.items() if g >= 1} for q, docs in _judged().items()}
    ids = {it["query_id"]: it for it in ragmeter.retrieval.score(rows, qrels=judged, k=5).items}
    for qid in ids:
        if qid != "q04":
            assert {k: v for k, v in texts[qid].items() if "answer" not in k} == ids[qid]
    assert texts["q04"]["recall@5"] == 0.0  # the joined context equals neither passage
    contains = ragmeter.retrieval.score(CONTEXTS, k=5, match="contains").items
    assert next(it for it in contains if it["query_id"] == "q04")["recall@5"] == 0.5
    assert all(it["answer_in_context@5"] == 1.0 for it in texts.values()
               if it["query_id"] != "q12")


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(("run", "qrels", "message"), [
    ("q Q0 a 1 x t\n", "q 0 a 1\n", r'line 1 of .*run\.trec: field "score": is \'x\''),
    ("q Q0 a 1\n", "q 0 a 1\n", r"line 1 of .*run\.trec: has 4 fields, expected the 6 .* It "
                                r"looks like a qrels line"),
    ("q Q0 a 1 1.0 t\n", "q 0 a 1 1.0 t\n", r"line 1 of .*qrels\.txt: has 6 fields, expected "
                                            r"the 4 .* It looks like a run line"),
    ("q Q0 a 1 1.0 t\n", "q 0 a high\n", r'line 1 of .*qrels\.txt: field "relevance": is '
                                         r'"high", expected an integer relevance grade'),
    ("q Q0 a 1 1.0 t\nq Q0 a 2 0.5 t\n", "q 0 a 1\n",
     r"line 2 of .*run\.trec: field \"doc_id\": document 'a' is retrieved twice"),
    ("q Q0 a 1 1.0 t\n", "q 0 a 1\nq 0 a 0\n", r"line 2 of .*qrels\.txt: .* judged twice"),
    ("q Q0 a 1 1.0 t\n", "p 0 a 1\n", r"no query could be scored .* run's queries are 'q'; the "
                                      r"judged ones 'p'"),
    ("", "q 0 a 1\n", r"run\.trec: has no run lines"),
])
def test_bad_trec_files_name_the_line(tmp_path: Path, run: str, qrels: str,
                                      message: str) -> None:
    (tmp_path / "run.trec").write_text(run, encoding="utf-8")
    (tmp_path / "qrels.txt").write_text(qrels, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        ragmeter.retrieval.score(tmp_path / "run.trec", qrels=tmp_path / "qrels.txt")


def test_a_trec_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "run.trec").write_bytes(b"q Q0 a 1 1.0 t\nq Q0 \xff 2 0.5 t\n")
    with pytest.raises(InputError, match=r"line 2 of .*run\.trec: is not valid UTF-8"):
        ragmeter.retrieval.score(tmp_path / "run.trec", qrels={"q": ["a"]})


@pytest.mark.parametrize(("rows", "message"), [
    ([{"qid": "q", "retrieved_ids": ["a"]}], r'field "query_id": is missing \(required\). '
                                              r"Found fields: qid, retrieved_ids"),
    ([{"query_id": "q", "docs": ["a"]}], r"has none of the fields that hold what was "
                                          r"retrieved \(retrieved_ids, doc_id, "),
    ([{"query_id": "q", "retrieved_ids": "a,b", "relevant_ids": ["a"]}],
     r'field "retrieved_ids": is \'a,b\', expected a list'),
    ([{"query_id": "q", "retrieved_ids": ["a", "b"], "scores": [1.0],
       "relevant_ids": ["a"]}], r'field "scores": has 1 scores for 2 retrieved ids'),
    ([{"query_id": "q", "retrieved_ids": ["a", ""], "relevant_ids": ["a"]}],
     r'field "retrieved_ids\[1\]": is an empty id'),
    ([{"query_id": "q", "retrieved_ids": ["a"], "relevant_ids": {"a": 1.5}}],
     r'field "relevant_ids\[0\]": is 1.5, expected an integer relevance grade'),
    ([{"query_id": "q", "retrieved_ids": ["a"], "relevant_ids": ["a"]},
      {"query_id": "q", "retrieved_ids": ["b"], "relevant_ids": ["a"]}],
     r"index 1 of <list of dicts>: field \"query_id\": query 'q' appears again \(first at "
     r"index 0\)"),
    ([{"query_id": "q", "retrieved_ids": ["a"], "scores": ["nan"], "relevant_ids": ["a"]}],
     r'field "scores\[0\]": is nan, expected a finite number'),
])
def test_bad_rows_name_the_row_and_the_field(rows: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(InputError, match=message):
        ragmeter.retrieval.score(rows)


def test_ids_against_texts_and_missing_judgments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="holds what was retrieved but no judgments .* "
                                          r"qrels= \(on the command line: --qrels QRELS\)"):
        ragmeter.retrieval.score([{"query_id": "q", "retrieved_ids": ["a"]}])
    with pytest.raises(ConfigError, match="retrieved document ids but gold passage texts"):
        ragmeter.retrieval.score([{"query_id": "q", "retrieved_ids": ["a"],
                                   "reference_contexts": ["text"]}])


@pytest.mark.parametrize(("options", "message"), [
    ({"k": 0}, r"k=0 must be positive whole numbers"),
    ({"k": [1, 2.5]}, r"k=\[1, 2.5\] must be"),
    ({"order": "rank"}, r"order='rank' is not one of 'score', 'given'"),
    ({"gain": "exp"}, r"gain='exp' is not one of"),
    ({"relevance_level": 0}, r"relevance_level=0 must be a whole number of at least 1"),
])
def test_bad_options_speak_python(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ragmeter.retrieval.score(RUN, qrels=QRELS, **options)
    with pytest.raises(TypeError, match="unexpected keyword argument 'cii'. Did you mean 'ci'"):
        ragmeter.retrieval.score(RUN, qrels=QRELS, cii=True)


# ------------------------------------------------------------------ the command line


def test_cli_score_writes_items_and_json(run_cli: Any, tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    out = tmp_path / "out.json"
    code, stdout, err = run_cli("retrieval", "score", RUN, "--qrels", QRELS, "--k", "1,10",
                                "--ci", "--by", "topic", "--items", items, "--json", out,
                                "--runs-dir", tmp_path)
    assert code == 0, err
    assert "nDCG" in stdout and "By topic" in stdout and "signature: family:retrieval" in stdout
    rows = [json.loads(line) for line in items.read_text(encoding="utf-8").splitlines()]
    assert [r["query_id"] for r in rows] == [f"q{i:02d}" for i in range(1, 13)]
    assert set(rows[0]) >= {"query_id", "status", "ndcg@10", "precision@1", "mrr", "map"}
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert summary["metrics"]["ndcg@10"] == pytest.approx(
        sum(r["ndcg@10"] for r in rows) / 12, abs=1e-15)
    assert "recorded" in err and len(list(tmp_path.glob("*-retrieval-*[0-9a-f].json"))) == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--k", "0"], "Invalid value for '--k'"),
    (["--order", "rank"], "Invalid value for '--order'"),
    (["--qrels", "missing.txt"], "does not exist"),
])
def test_cli_bad_options_exit_2(run_cli: Any, args: list[str], message: str) -> None:
    code, _, err = run_cli("retrieval", "score", RUN, "--no-record", *args)
    assert code == 2 and message in err and "Traceback" not in err


def test_cli_compare_with_names_and_separate_judgment_columns(run_cli: Any,
                                                             tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.jsonl"
    qrels.write_text("".join(json.dumps({"topic": q, "doc": d, "label": g}) + "\n"
                             for q, d, g in _qrels_rows()), encoding="utf-8")
    code, stdout, err = run_cli("retrieval", "compare", RUN, DENSE, "--qrels", qrels,
                                "--qrels-field", "query_id=topic", "--qrels-field", "doc_id=doc",
                                "--qrels-field", "relevance=label", "--name", "bm25",
                                "--name", "dense", "--k", "10", "--no-record")
    assert code == 0, err
    assert "dense against bm25 on 12 paired queries" in stdout
    assert re.search(r"nDCG@10 +0\.6963 +0\.8309 +0\.1346", stdout)  # docs/retrieval.md
    code, _, err = run_cli("retrieval", "compare", RUN, DENSE, "--qrels", QRELS, "--name", "x",
                           "--no-record")
    assert code == 2 and "--name" in err


def test_cli_bad_input_is_one_line(run_cli: Any, tmp_path: Path) -> None:
    (tmp_path / "run.trec").write_text("q Q0 a 1 1.0 t\nq Q0 a 2 0.5 t\n", encoding="utf-8")
    code, _, err = run_cli("retrieval", "score", tmp_path / "run.trec", "--qrels", QRELS,
                           "--no-record")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("error: retrieval: line 2 of ") and "--duplicates first" in err
    code, _, err = run_cli("retrieval", "score", tmp_path / "run.trec", "--qrels", QRELS,
                           "--no-record", "--duplicates", "first")
    assert code == 2 and "no query could be scored" in err  # q is not judged in the sample
