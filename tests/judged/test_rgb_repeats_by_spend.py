"""``rgb judge`` / ``rgb run`` with ``--repeats``, ``--by`` and the spend after a run (issue 15,
items 7-9), over real HTTP to the scripted OpenAI-compatible server on 127.0.0.1, on the
shared RGB data (zh_refine.json: Rej*; en_fact.json: ED*/CR*)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import ragmeter
from ragmeter.io import iter_rows
from ragmeter.runner._store import Store
from tests.conftest import shared
from tests.judged.helpers import coin, fleiss, flip_rate, server_money

N = 30
PRICE_IN, PRICE_OUT = 2.0, 8.0


def _rows(name: str) -> list[dict]:
    rows = [dict(r.data) for r in iter_rows(shared("rgb", name), component="rgb")]
    return rows[:N]


def _judge_says(body: dict) -> str:
    """A varied judge: each item has a base verdict, and repeat k (seed k) flips a third."""
    user = body["messages"][-1]["content"]
    verdict = coin(user, "base")
    if body.get("seed") and coin(user, body["seed"], p=0.33):
        verdict = not verdict
    return ("No, the question is not addressed by the documents." if verdict
            else "Yes, the question is addressed by the documents.")


def _preds(rows: list[dict]) -> list[dict]:
    return [{"id": r["id"], "prediction": f"答案 {i}" if i % 3 else "文档信息不足，无法回答。",
             "system": "a" if i % 2 else "b"} for i, r in enumerate(rows)]


def test_rgb_judge_repeats_are_distinct_calls_and_kappa_matches(scripted_server,
                                                                tmp_path: Path) -> None:
    server = scripted_server(reply=_judge_says)
    rows = _rows("zh_refine.json")
    preds = _preds(rows)
    backend = ragmeter.backends.openai("scripted", base_url=server.url,
                                       price_prompt=PRICE_IN, price_completion=PRICE_OUT)
    store = Store(tmp_path / "s.sqlite")
    res = ragmeter.rgb.judge(preds, data=rows, name="zh_refine", backend=backend, store=store,
                             repeats=3, by="system", progress=False)
    # 3 distinct calls per item, all answered over HTTP (no cache hit among repeats)
    assert server.stats()["calls"] == 3 * N
    bodies = [json.loads(b) for b in server.answered_bodies]
    assert sorted(b.get("seed", 0) for b in bodies) == sorted([0, 1, 2] * N) or \
        sorted(b.get("seed") or 0 for b in bodies) == sorted([0] * N + [1] * N + [2] * N)
    # the verdicts per item and repeat, recomputed from the server's own rule
    by_user: dict[str, list[bool]] = {}
    for b in bodies:
        by_user.setdefault(b["messages"][-1]["content"], []).append(
            "not addressed" in _judge_says(b))
    ratings = [v for v in by_user.values()]
    assert len(ratings) == N and all(len(r) == 3 for r in ratings)
    st = res.summary["stability"]
    assert st["repeats"] == 3 and st["items"] == N
    assert st["flip_rate"] == pytest.approx(flip_rate(ratings))
    assert st["fleiss_kappa"] == pytest.approx(fleiss(ratings))
    assert 0 < st["flip_rate"] < 1
    # per-item agreement in the items
    agreements = [it["judge"]["agreement"] for it in res.items]
    assert all(a in (pytest.approx(1.0), pytest.approx(2 / 3)) for a in agreements)
    # the headline is repeat 0's Rej*
    first = [b for b in bodies if not b.get("seed")]
    rej0 = sum("not addressed" in _judge_says(b) for b in first) / N
    assert res.summary["metrics"]["reject_rate_judged"] == pytest.approx(rej0)
    # money = tokens x price, from the server's own counts
    p, c, usd = server_money(server.answered_bodies, _judge_says, PRICE_IN, PRICE_OUT)
    sp = res.summary["spend"]
    assert (sp["calls"], sp["prompt_tokens"], sp["completion_tokens"]) == (3 * N, p, c)
    assert sp["cost_usd"] == pytest.approx(usd) and sp["cached"]["calls"] == 0
    # --by groups partition the items: coverage, calls, tokens and money add up
    groups = res.summary["groups"]["values"]
    assert set(groups) == {"a", "b"}
    assert sum(g["coverage"]["rows"] for g in groups.values()) == N
    for key in ("calls", "prompt_tokens", "completion_tokens"):
        assert sum(g["spend"][key] for g in groups.values()) == sp[key]
    assert sum(g["spend"]["cost_usd"] for g in groups.values()) == pytest.approx(usd)
    for name, g in groups.items():
        mine = [it for it, pr in zip(res.items, preds, strict=True) if pr["system"] == name]
        flags = [it["judge"]["flag"] for it in mine]
        assert g["metrics"]["reject_rate_judged"] == pytest.approx(sum(flags) / len(flags))
        lo, hi = g["ci95"]["reject_rate_judged"]
        assert lo <= g["metrics"]["reject_rate_judged"] <= hi

    # resumable: the same call again is all cache, costs 0, shows the original cost as cached
    server.reset_counts()
    again = ragmeter.rgb.judge(preds, data=rows, name="zh_refine", backend=backend,
                               store=store, repeats=3, progress=False)
    assert server.stats()["calls"] == 0
    assert again.summary["spend"]["calls"] == 0 and again.summary["spend"]["cost_usd"] == 0
    assert again.summary["spend"]["cached"]["calls"] == 3 * N
    assert again.summary["spend"]["cached"]["cost_usd"] == pytest.approx(usd)
    assert again.summary["stability"] == st
    # one more repeat pays for the new repeat only
    more = ragmeter.rgb.judge(preds, data=rows, name="zh_refine", backend=backend,
                              store=store, repeats=4, progress=False)
    assert server.stats()["calls"] == N and more.summary["spend"]["calls"] == N


def test_rgb_run_repeats_by_noise_rate_cli(scripted_server, tmp_path: Path, run_cli) -> None:
    """``rgb run --judge --repeats 2 --by role`` on shared en_fact.json (ED*): console,
    results JSON, run record and HTML report carry stability, groups and spend."""
    def reply(body: dict) -> str:
        user = body["messages"][-1]["content"]
        if "Now judge:" in user:
            return _judge_says(body)
        # distinct answers, so their judge calls are distinct too
        return f"The answer is {hashlib.sha256(user.encode()).hexdigest()[:10]}."

    server = scripted_server(reply=reply)
    runs = tmp_path / "runs"
    code, out, err = run_cli(
        "rgb", "run", "--data", shared("rgb", "en_fact.json"), "--limit", "8",
        "--backend", "openai", "--model", "scripted", "--base-url", server.url,
        "--store", tmp_path / "s.sqlite", "--judge", "--repeats", "2", "--by", "role",
        "--price-in", "1", "--price-out", "3", "--out", tmp_path / "o", "--no-plot",
        "--runs-dir", runs)
    assert code == 0, err
    doc = json.loads((tmp_path / "o" / "rgb_results.json").read_text(encoding="utf-8"))
    # 2 settings x 8 answers + 8 judged items x 2 repeats
    assert server.stats()["calls"] == 16 + 16
    assert doc["spend"]["calls"] == 32
    groups = doc["groups"]["values"]
    assert set(groups) == {"fact_doc", "fact_nodoc"}
    assert groups["fact_doc"]["spend"]["calls"] == 8 + 16
    assert groups["fact_nodoc"]["spend"]["calls"] == 8
    assert "ed_judged" in groups["fact_doc"]["metrics"]
    setting = "en_fact/" + next(iter(doc["stability"])).split("/", 1)[1]
    assert doc["stability"][setting]["repeats"] == 2
    assert f"stability [{setting}] over 2 repeats" in out
    assert "By role" in out and "spent: 32 call(s)" in out
    from ragmeter.runs._records import list_runs

    (rec,) = list_runs(runs_dir_override=runs)
    assert rec.result["spend"]["calls"] == 32 and rec.result["groups"]["by"] == "role"
    from ragmeter.reports.html import render_report

    page = render_report([rec])
    assert "Spend" in page and "By role" in page and "stability" in page.lower()


def test_rgb_score_by_a_predictions_column(run_cli, tmp_path: Path) -> None:
    """``rgb score --by system`` on shared en_fact.json: per-group accuracy, ED and CR equal an
    independent count over the items, and the groups add up to the file."""
    rows = _rows("en_fact.json")
    preds = []
    for i, r in enumerate(rows):
        answer = r["answer"][0] if isinstance(r["answer"], list) else r["answer"]
        answer = answer[0] if isinstance(answer, list) else answer
        text = (f"There are factual errors in the provided documents. {answer}" if i % 4 == 0
                else str(answer) if i % 3 else "I do not know.")
        preds.append({"id": r["id"], "prediction": text, "system": f"s{i % 3}"})
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in preds), encoding="utf-8")
    code, out, err = run_cli("rgb", "score", path, "--data", shared("rgb", "en_fact.json"),
                             "--noise-rate", "0", "--by", "system", "--json",
                             tmp_path / "r.json", "--items", tmp_path / "i.jsonl",
                             "--no-record")
    assert code == 0, err
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    items = [json.loads(line) for line in (tmp_path / "i.jsonl").read_text().splitlines()]
    groups = doc["groups"]["values"]
    # instances without a prediction row have no system: the "(empty)" group, all unscored
    assert set(groups) == {"", "s0", "s1", "s2"} and "By system" in out
    assert groups[""]["coverage"] == {"rows": 100 - N, "scored": 0, "unscored": 100 - N,
                                      "reasons": {"missing_prediction": 100 - N}}
    assert sum(g["coverage"]["rows"] for g in groups.values()) == len(items) == 100
    system = {str(p["id"]): p["system"] for p in preds}
    for name, g in groups.items():
        if not name:
            continue
        mine = [i for i in items if system.get(str(i["id"])) == name and i["status"] == "ok"]
        assert g["metrics"]["accuracy"] == pytest.approx(
            sum(i["correct"] for i in mine) / len(mine))
        facts = [i for i in mine if i["factlabel"] == 1]
        assert g["metrics"]["ed"] == pytest.approx(len(facts) / len(mine))
        good = sum(1 for i in facts if 0 not in i["labels"])
        assert g["metrics"]["cr"] == pytest.approx(good / len(facts) if facts else 0.0)
        assert "spend" not in g  # no model was called
