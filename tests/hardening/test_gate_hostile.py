"""``ragmeter gate`` fed hostile result files (issue 29 item 2): whatever it reads is checked
whole (finite numbers, ordered intervals, counts, known types) and anything else exits 2 with
one line, never 0 and never a traceback.  A number that is absent or flagged fails (exit 1).
The same checks guard ``assert_metric`` on a summary dict (ConfigError)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ragmeter.errors import ConfigError
from ragmeter.testing import assert_metric


def _doc(**row: object) -> dict:
    """A result with one headline row (f1 of system a: 0.8 [0.7, 0.9], n 10) and `row`'s
    fields replaced."""
    base = {"metric": "f1", "group": "a", "value": 0.8, "ci": [0.7, 0.9], "n": 10,
            "coverage": 1.0, "higher_is_better": True, "flag": None}
    return {"family": "multilingual", "signature": "s",
            "coverage": {"rows": 10, "scored": 10, "unscored": 0, "reasons": {}},
            "headline": [{**base, **row}]}


def _write(tmp_path: Path, doc: object | str) -> Path:
    path = tmp_path / "result.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


def _gate(run_cli, path: Path, *extra: str, require: str = "f1>=0.5"):
    code, out, err = run_cli("gate", path, "--require", require, *extra)
    assert "Traceback" not in out + err
    return code, out, err


def test_a_well_formed_result_passes_by_value_and_by_ci(run_cli, tmp_path: Path) -> None:
    path = _write(tmp_path, _doc())
    assert _gate(run_cli, path)[0] == 0
    assert _gate(run_cli, path, "--ci")[0] == 0
    assert _gate(run_cli, path, "--ci", require="f1>=0.75")[0] == 1  # lower bound 0.7


# Each case: the JSON text of the result file, and a word of the one-line error.
MALFORMED = {
    "inverted CI": (json.dumps(_doc(ci=[0.9, 0.1])), "inverted CI"),
    "Infinity value": (json.dumps(_doc()).replace("0.8", "Infinity", 1), "strict JSON"),
    "-Infinity in CI": (json.dumps(_doc()).replace("0.7", "-Infinity", 1), "strict JSON"),
    "NaN value": (json.dumps(_doc()).replace("0.8", "NaN", 1), "strict JSON"),
    "overflowing value": (json.dumps(_doc()).replace("0.8", "1e999", 1), "finite number"),
    "true value": (json.dumps(_doc(value=True)), "finite number"),
    "string value": (json.dumps(_doc(value="0.9")), "finite number"),
    "string CI": (json.dumps(_doc(ci="[0.7, 0.9]")), "[lower, upper]"),
    "CI of three": (json.dumps(_doc(ci=[0.1, 0.2, 0.3])), "[lower, upper]"),
    "CI with null": (json.dumps(_doc(ci=[None, 0.9])), "[lower, upper]"),
    "negative n": (json.dumps(_doc(n=-3)), "not a count"),
    "boolean n": (json.dumps(_doc(n=True)), "not a count"),
    "coverage above 1": (json.dumps(_doc(coverage=2.0)), "share in [0, 1]"),
    "metric not a string": (json.dumps(_doc(metric=7)), "no metric name"),
    "headline not a list": (json.dumps({"headline": {"f1": 0.9}}), "expected a list"),
    "row not an object": (json.dumps({"headline": [0.9]}), "expected an object"),
    "group a number": (json.dumps(_doc(group=3)), "expected a string"),
    "direction a string": (json.dumps(_doc(higher_is_better="yes")), "true or false"),
    "counts not counts": (json.dumps({**_doc(), "coverage": {"rows": "10", "scored": 10}}),
                          "not a count"),
    "a list": ("[1, 2, 3]", "expected a JSON object"),
    "a string": ('"f1>=0.9"', "expected a JSON object"),
    "empty file": ("", "is not JSON"),
    "deep nesting": ("[" * 100_000, "nested too deeply"),
    "legacy true metric": (json.dumps({"metrics": {"f1": True}}), "not a number"),
    "legacy infinite metric": (json.dumps({"metrics": {"f1": 1e400}}).replace(
        "Infinity", "1e999"), "finite number"),
    "legacy inverted ci95": (json.dumps({"metrics": {"f1": 0.8}, "ci95": {"f1": [0.9, 0.1]}}),
                             "inverted interval"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_results_exit_2_with_one_line(case: str, run_cli, tmp_path: Path) -> None:
    text, words = MALFORMED[case]
    path = _write(tmp_path, text)
    for extra in ((), ("--ci",)):
        code, out, err = _gate(run_cli, path, *extra)
        assert code == 2, (case, code, out, err)
        assert err.startswith("error: gate:") and words in err, (case, err)
        assert len(err.strip().splitlines()) == 1 and "ok " not in out


@pytest.mark.parametrize("threshold", ["-1e999", "1e999", "nan", "inf", "-inf", "0x1",
                                       "1e99999999999"])
def test_thresholds_that_are_not_finite_numbers_exit_2(threshold: str, run_cli,
                                                       tmp_path: Path) -> None:
    path = _write(tmp_path, _doc())
    code, _, err = _gate(run_cli, path, require=f"f1>={threshold}")
    assert code == 2 and "error: gate:" in err, err


@pytest.mark.parametrize("ci", [None, "none"])
def test_a_missing_interval_with_ci_exits_2_and_says_so(ci, run_cli, tmp_path: Path) -> None:
    path = _write(tmp_path, _doc(ci=None) if ci is None else
                  {**_doc(), "headline": [{"metric": "f1", "group": "a", "value": 0.8}]})
    code, _, err = _gate(run_cli, path, "--ci")
    assert code == 2 and "no confidence interval" in err and "--ci" in err
    assert "ci=True" not in err  # the command line speaks flags
    assert _gate(run_cli, path)[0] == 0  # by value it holds


@pytest.mark.parametrize("row", [{"value": None}, {"flag": "degenerate judge"}])
def test_absent_or_flagged_numbers_never_pass(row: dict, run_cli, tmp_path: Path) -> None:
    path = _write(tmp_path, _doc(**row))
    code, out, _ = _gate(run_cli, path, require="f1>=-1000000")
    assert code == 1 and out.startswith("FAIL")
    code, _, _ = _gate(run_cli, path, require="f1<=1000000")
    assert code == 1


def test_files_that_are_not_results(run_cli, tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"headline": "\xff\xfe"}')
    for target, words in ((tmp_path / "folder", "is a folder"),
                          (tmp_path / "missing.json", "does not exist"),
                          (bad, "cannot be read"),
                          ("no-such-run", "neither a file nor a stored run id")):
        code, _, err = _gate(run_cli, target, "--runs-dir", tmp_path / "folder")
        assert code == 2 and words in err, (target, err)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.json"
        os.mkfifo(fifo)
        code, _, err = _gate(run_cli, fifo)
        assert code == 2 and "not a regular file" in err


def test_unknown_metric_and_group_list_the_valid_ones_in_flags(run_cli, tmp_path: Path
                                                               ) -> None:
    doc = _doc()
    doc["headline"].append({**doc["headline"][0], "group": "b"})
    doc["headline"].append({**doc["headline"][0], "metric": "em", "group": "a"})
    path = _write(tmp_path, doc)
    code, _, err = _gate(run_cli, path, require="f2>=0.5")
    assert code == 2 and "its metrics: f1, em" in err and "Did you mean: f1?" in err
    code, _, err = _gate(run_cli, path, "--group", "c")
    assert code == 2 and "its groups: a, b" in err and "--group a" in err
    code, _, err = _gate(run_cli, path)
    assert code == 2 and "several groups (a, b)" in err and "--group a" in err
    assert "group=" not in err
    # Python speaks arguments, from the same facts
    with pytest.raises(ConfigError) as raised:
        assert_metric(doc, "f1", min=0.5)
    assert "several groups (a, b)" in str(raised.value) and "group='a'" in str(raised.value)
    assert "--group" not in str(raised.value)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), True, "0.5"])
def test_assert_metric_refuses_bad_thresholds_and_documents(bad: object) -> None:
    with pytest.raises(ConfigError, match="is not a finite number"):
        assert_metric(_doc(), "f1", group="a", min=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="inverted CI"):
        assert_metric(_doc(ci=[0.9, 0.1]), "f1", group="a", min=0.5, ci=True)


def test_run_ids_prefixes_and_latest_like_report(run_cli, tmp_path: Path) -> None:
    import ragmeter
    from ragmeter.io._samples import sample_path

    runs = tmp_path / "runs"
    older = ragmeter.retrieval.score(sample_path("retrieval_run.jsonl"),
                                     qrels=sample_path("retrieval_qrels.txt")).save(str(runs))
    newer = ragmeter.reliability.score(sample_path("reliability_annotations.csv"),
                                       qc="qc_maria").save(str(runs))
    req = ("--runs-dir", runs)
    code, out, err = run_cli("gate", "latest", "--require", "reliability>=0.5", *req)
    assert code == 0, err
    assert "reliability holds" in out  # the pooled ("all") number, the only one without a group
    code, out, err = run_cli("gate", older.run_id, "--require", "ndcg@10>=0.5", *req)
    assert code == 0, err
    code, _, err = run_cli("gate", str(newer.run_id)[:-3], "--require", "reliability>=0.5",
                           "--group", "ann_ayo", *req)
    assert code == 0, err
    code, _, err = run_cli("gate", "latest", "--require", "ndcg@10>=0.5", *req)
    assert code == 2 and "no metric 'ndcg@10'" in err and "reliability" in err
