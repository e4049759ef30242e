"""``multilingual judge --repeats --by`` with its spend over the scripted server on the shared
LBRAG answers, and ``reliability score --by`` (issue 15, items 7-9)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import ragmeter
from ragmeter.io._samples import sample_path
from ragmeter.runner._store import Store
from tests.conftest import shared
from tests.judged.helpers import coin, fleiss, flip_rate, server_money

N = 24


def _answers() -> list[dict]:
    path = shared("lbrag", "20251214_2145", "20251214_2145_answers.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[:N]]
    return [{k: r[k] for k in ("sample_id", "sample_lang", "system", "question",
                               "gold_answer", "pred_answer")} for r in rows]


def _reply(body: dict) -> str:
    user = body["messages"][-1]["content"]
    score = 1.0 if coin(user, "base", p=0.6) else 0.0
    if body.get("seed") and coin(user, body["seed"], p=0.3):
        score = 1.0 - score
    return json.dumps({"score": score, "explanation": "scripted"})


def test_multilingual_judge_repeats_by_system_and_spend(scripted_server, tmp_path: Path,
                                                        run_cli) -> None:
    server = scripted_server(reply=_reply)
    rows = _answers()
    backend = ragmeter.backends.openai("j", base_url=server.url, price_prompt=3.0,
                                       price_completion=15.0)
    res = ragmeter.multilingual.judge(rows, scoring="generate", backend=backend,
                                      store=Store(tmp_path / "s.sqlite"), repeats=3,
                                      by="system", progress=False)
    distinct = len({json.dumps(b["messages"]) for b in map(json.loads, server.answered_bodies)})
    assert server.stats()["calls"] == 3 * distinct
    ratings: dict[str, list[float]] = {}
    for b in sorted(map(json.loads, server.answered_bodies), key=lambda b: b.get("seed") or 0):
        ratings.setdefault(b["messages"][-1]["content"], []).append(
            json.loads(_reply(b))["score"])

    def verdicts(row: dict) -> list[float]:
        """The server's scores for this row's prompt (identical prompts share their calls)."""
        (found,) = {k for k in ratings if row["question"] in k and
                    f"Reference answer:\n{row['gold_answer']}\n" in k and
                    f"Answer to judge:\n{row['pred_answer']}\n" in k}
        return ratings[found]

    per_row = [verdicts(r) for r in rows]
    st = res.summary["stability"]
    assert st["flip_rate"] == pytest.approx(flip_rate(per_row))
    assert st["fleiss_kappa"] == pytest.approx(fleiss(per_row))
    p, c, usd = server_money(server.answered_bodies, _reply, 3.0, 15.0)
    sp = res.summary["spend"]
    assert sp["prompt_tokens"] + sp["cached"]["prompt_tokens"] >= p
    groups = res.summary["groups"]["values"]
    assert set(groups) == {r["system"] for r in rows}
    assert sum(g["coverage"]["rows"] for g in groups.values()) == N
    for key in ("calls", "prompt_tokens", "completion_tokens"):
        assert sum(g["spend"][key] for g in groups.values()) == sp[key]
    if distinct == N:  # no two rows share a prompt: every call is this run's own
        assert (sp["prompt_tokens"], sp["completion_tokens"]) == (p, c)
        assert sp["cost_usd"] == pytest.approx(usd)
    for name, g in groups.items():
        vals = [i["semantic_score"] for i in res.items if i["system"] == name]
        assert g["metrics"]["semantic_score"] == pytest.approx(sum(vals) / len(vals))
        assert g["stability"]["repeats"] == 3


def _with_lang(tmp_path: Path) -> Path:
    """The sample annotations with a made-up ``lang`` column per item."""
    src = sample_path("reliability_annotations.csv")
    with open(src, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["lang"] = "en" if coin(r["item_id"], p=0.5) else "sw"
    out = tmp_path / "ann.csv"
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return out


def test_reliability_by_evaluator_and_language(tmp_path: Path, run_cli) -> None:
    res = ragmeter.reliability.score(sample_path("reliability_annotations.csv"),
                                     qc="qc_maria", by="evaluator")
    groups = res.summary["groups"]["values"]
    for name, ev in res.summary["evaluators"].items():  # one evaluator per group: the same
        assert groups[name]["metrics"]["reliability"] == pytest.approx(ev["reliability"])
    path = _with_lang(tmp_path)
    code, out, err = run_cli("reliability", "score", path, "--qc", "qc_maria", "--by", "lang",
                             "--json", tmp_path / "r.json", "--no-record")
    assert code == 0, err
    doc = json.loads((tmp_path / "r.json").read_text())
    g = doc["groups"]["values"]
    assert set(g) == {"en", "sw"} and "By lang" in out
    # the groups split every evaluator's items: pairs and applicable items add up
    assert sum(v["coverage"]["total"] for v in g.values()) == doc["coverage"]["total"]
    assert sum(v["metrics"]["n"] for v in g.values()) == sum(
        e["applicable_items"] for e in doc["evaluators"].values())
    for v in g.values():
        lo, hi = v["ci95"]["reliability"]
        assert lo <= v["metrics"]["reliability"] <= hi
