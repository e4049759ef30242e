"""``trace label``: request building and assembling (pure, with canned outcomes), and the
CLI end to end against the scripted OpenAI-compatible test server (no model)."""

from __future__ import annotations

import json
import math
import re

import pytest

from ragmeter.backends._types import Response
from ragmeter.runner._run import Outcome
from ragmeter.trace._data import SourceRow
from ragmeter.trace._label import (
    LabelConfig,
    assemble,
    build_requests,
    load_prompts,
    prepare,
    select_evidence,
)
from tests.conftest import shared

SOURCE = SourceRow(
    id="q1", row=1, question="Where do the Nets play?",
    documents=("The Nets are a basketball team. They play in Brooklyn.",
               "Paris is in France."),
    response="The Nets play in Brooklyn. They won in 2030.")


def outcome(request, *, text="", p_yes=None, ok=True):
    if not ok:
        return Outcome(request, "unscored", reason="http_500", detail="server error")
    probs = None if p_yes is None else {"yes": p_yes, "no": 1 - p_yes}
    return Outcome(request, "ok", Response(text=text, choice_probs=probs))


def test_prepare_splits_and_keys_the_ragbench_way():
    p = prepare(SOURCE, LabelConfig())
    assert p.documents_sentences == (
        (("0a", "The Nets are a basketball team."), ("0b", "They play in Brooklyn.")),
        (("1a", "Paris is in France."),))
    assert p.response_sentences == (("a", "The Nets play in Brooklyn."),
                                    ("b", "They won in 2030."))


def test_json_strategy_prompt_and_parse():
    config = LabelConfig(strategy="json")
    p = prepare(SOURCE, config)
    (req,) = build_requests(p, config)
    text = req.messages[0].content
    assert "0a. The Nets are a basketball team.\n0b. They play in Brooklyn.\n1a. Paris" in text
    assert "a. The Nets play in Brooklyn.\nb. They won in 2030." in text
    reply = json.dumps({
        "all_relevant_sentence_keys": ["0b."], "all_utilized_sentence_keys": ["0b", "9x"],
        "sentence_support_information": [
            {"response_sentence_key": "a", "supporting_sentence_keys": ["0b"],
             "fully_supported": True, "explanation": ""},
            {"response_sentence_key": "b", "supporting_sentence_keys": [],
             "fully_supported": False, "explanation": ""}],
        "overall_supported": False})
    row = assemble(p, [outcome(req, text="```json\n" + reply + "\n```")], config, "fake:m")
    assert row["status"] == "ok"
    assert row["all_relevant_sentence_keys"] == ["0b"]
    assert row["unsupported_response_sentence_keys"] == ["b"]
    assert row["dropped_keys"] == 1 and row["adherence_score"] is False
    bad = assemble(p, [outcome(req, text="no idea")], config, "fake:m")
    assert (bad["status"], bad["reason"]) == ("unscored", "no_json")


def test_choice_strategy_requests_and_assembly():
    config = LabelConfig(strategy="choice", evidence_sentences=1)
    p = prepare(SOURCE, config)
    reqs = build_requests(p, config)
    kinds = [r.id.split(":")[1] for r in reqs]
    assert kinds == ["relevance"] * 3 + ["utilization"] * 3 + ["support"] * 2
    assert all(r.choices == ("yes", "no") for r in reqs)
    # evidence for "They won in 2030." is the one sentence sharing most words ("they")
    assert "Evidence:\nThey play in Brooklyn.\n\nClaim: They won" in reqs[7].messages[0].content
    assert "Paris" not in reqs[6].messages[0].content
    probs = [0.2, 0.9, 0.1, 0.3, 0.8, 0.0, 0.95, 0.3]
    row = assemble(p, [outcome(r, p_yes=q) for r, q in zip(reqs, probs, strict=True)],
                   config, "fake:m")
    assert row["all_relevant_sentence_keys"] == ["0b"]
    assert row["all_utilized_sentence_keys"] == ["0b"]
    assert row["unsupported_response_sentence_keys"] == ["b"]
    assert row["adherence_probability"] == 0.3
    failed = assemble(p, [outcome(r, ok=(i != 2)) for i, r in enumerate(reqs)], config, "f")
    assert failed["status"] == "unscored" and failed["reason"] == "http_500"


def test_choice_tasks_subset_leaves_other_labels_null():
    config = LabelConfig(strategy="choice", tasks=("support",))
    p = prepare(SOURCE, config)
    reqs = build_requests(p, config)
    assert len(reqs) == 2
    row = assemble(p, [outcome(r, p_yes=0.6) for r in reqs], config, "f")
    assert row["all_relevant_sentence_keys"] is None and row["adherence_score"] is True


@pytest.mark.parametrize("k, expected", [(0, 3), (1, 1), (2, 2), (10, 3)])
def test_select_evidence_size(k, expected):
    cands = [("0a", "alpha beta"), ("0b", "gamma delta"), ("1a", "beta gamma")]
    assert len(select_evidence("beta gamma", cands, k)) == expected


def test_ragbench_prompt_file(tmp_path):
    path = shared("ragbench", "labeling_prompt.txt")
    prompts = load_prompts(str(path))
    assert prompts.version == "file:labeling_prompt.txt"
    config = LabelConfig(strategy="json", prompts=prompts)
    (req,) = build_requests(prepare(SOURCE, config), config)
    text = req.messages[0].content
    assert "0a. The Nets are a basketball team." in text and '"all_relevant_sentence_keys"' in text
    bad = tmp_path / "p.txt"
    bad.write_text("no fields here")
    with pytest.raises(Exception, match="has no {documents} field"):
        load_prompts(str(bad))


def _json_reply(body):
    """A scripted judge: every shown document sentence is relevant and used; response
    sentences containing 'Brooklyn' are supported."""
    text = body["messages"][-1]["content"]
    doc_keys = re.findall(r"^(\d+[a-z]+)\. ", text, re.M)
    answer = text.split("Answer, one sentence per line after its key:\n", 1)[1]
    resp = re.findall(r"^([a-z]+)\. (.*)$", answer.split("\n\n")[0], re.M)
    return json.dumps({
        "all_relevant_sentence_keys": doc_keys, "all_utilized_sentence_keys": doc_keys[:1],
        "sentence_support_information": [
            {"response_sentence_key": k, "explanation": "", "supporting_sentence_keys": [],
             "fully_supported": "Brooklyn" in s} for k, s in resp],
        "overall_supported": True})


def test_cli_label_json_then_score(tmp_path, run_cli, scripted_server):
    server = scripted_server(reply=_json_reply)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "q1", "question": SOURCE.question,
                                "documents": list(SOURCE.documents),
                                "response": SOURCE.response}) + "\n")
    labels = tmp_path / "labels.jsonl"
    code, _, err = run_cli("trace", "label", rows, "--out", labels, "--backend", "openai",
                           "--model", "scripted", "--base-url", server.url,
                           "--store", tmp_path / "s.sqlite")
    assert code == 0, err
    row = json.loads(labels.read_text())
    assert row["strategy"] == "json" and row["status"] == "ok"
    assert row["unsupported_response_sentence_keys"] == ["b"]
    code, out, err = run_cli("trace", "score", labels, "--json", tmp_path / "m.json")
    assert code == 0, err
    m = json.loads((tmp_path / "m.json").read_text())["metrics"]
    assert m["relevance"]["mean"] == 1.0 and m["utilization"]["mean"] == pytest.approx(1 / 3)
    assert m["completeness"]["mean"] == pytest.approx(1 / 3) and m["adherence"]["mean"] == 0.0


def test_cli_run_choice_on_a_split(tmp_path, run_cli, scripted_server):
    """Choice strategy through logprobs; `trace run` validates beside the baselines."""
    def logprobs(body):
        p = 0.8 if "Samsung" in body["messages"][-1]["content"] else 0.3
        return {"yes": math.log(p), "no": math.log(1 - p)}

    server = scripted_server(logprobs=logprobs)
    split = shared("ragbench", "emanual", "test-00000-of-00001.parquet")
    out = tmp_path / "v.json"
    code, stdout, err = run_cli(
        "trace", "run", split, "--limit", "4", "--strategy", "choice", "--max-doc-sentences",
        "2", "--out", tmp_path / "l.jsonl", "--json", out, "--backend", "openai", "--model",
        "scripted", "--base-url", server.url, "--store", tmp_path / "s.sqlite")
    assert code == 0, err
    data = json.loads(out.read_text())
    judge = next(k for k in data["judges"] if "choice" in k)
    assert data["judges"][judge]["relevance_rmse"]["n"] == 4
    assert data["judges"]["gpt-3.5 (released)"]["relevance_rmse"]["n"] == 4
    assert "released" in stdout
