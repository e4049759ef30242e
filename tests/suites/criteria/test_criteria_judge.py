"""The criteria judge end to end against the scripted OpenAI-compatible server on 127.0.0.1
(real HTTP): malformed replies unscored with their reasons, combined replies, logprobs choice
scoring and the expected score, repeats and their stability, validation against human scores
on the judge card with the at-chance alarm, --dry-run tokens and money, --by, the CLI's exit
codes, a kill -9 and a resume that pays for nothing twice, and the Result contract."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ragmeter
from ragmeter.runner._store import Store
from ragmeter.testing import check_metric
from tests.conftest import REPO
from tests.judged.helpers import fleiss, flip_rate
from tests.servers.scripted_openai import Faults, last_user_text

QUESTION = re.compile(r"### Question\n(Q\d+)")
CRITERION = re.compile(r"Criterion: (\w+)")


def _rows(n: int = 6) -> list[dict]:
    return [{"id": f"r{i}", "question": f"Q{i}", "response": f"answer {i}",
             "reference": f"reference {i}", "topic": "brakes" if i % 2 else "tyres",
             "human": {"relevance": 1 + i % 5, "completeness": i % 3}} for i in range(n)]


def _question(body: dict) -> int:
    return int(QUESTION.search(last_user_text(body)).group(1)[1:])


def _criterion(body: dict) -> str:
    return CRITERION.search(last_user_text(body)).group(1)


def _backend(server, **options):
    return ragmeter.backends.openai("scripted", base_url=server.url, **options)


def _judge(server, rows, criteria=("relevance",), store=None, backend_options=None,
           **options):
    options.setdefault("progress", False)
    return ragmeter.criteria.judge(rows, criteria=list(criteria),
                                   backend=_backend(server, **(backend_options or {})),
                                   store=store, **options)


# ------------------------------------------------------------------ replies


def test_malformed_replies_are_unscored_with_their_reasons(scripted_server, tmp_path) -> None:
    replies = ['{"score": 4, "explanation": "fine"}', "I'd say four out of five.",
               '{"score": 9}', '{"rating": 3}', '{"score": "four"}',
               '```json\n{"score": 2, "explanation": "fenced"}\n```']
    server = scripted_server(reply=lambda body: replies[_question(body)])
    result = _judge(server, _rows(6), scoring="generate", store=tmp_path / "s.sqlite")
    by_id = {r["id"]: r for r in result.items}
    assert [(by_id[f"r{i}"]["score"], by_id[f"r{i}"].get("reason")) for i in range(6)] == [
        (4, None), (None, "malformed_json"), (None, "out_of_scale"), (None, "missing_score"),
        (None, "not_a_number"), (2, None)]
    assert by_id["r0"]["explanation"] == "fine" and by_id["r1"]["reply"] == replies[1]
    assert result.coverage == {"rows": 6, "scored": 2, "unscored": 4, "reasons": {
        "malformed_json": 1, "missing_score": 1, "not_a_number": 1, "out_of_scale": 1}}
    (mean,) = [h for h in result.headline if (h.group, h.metric) ==
               ("relevance", "criterion_score")]
    assert (mean.value, mean.n, mean.coverage) == (3.0, 2, pytest.approx(2 / 6))
    assert server.stats()["calls"] == 6


def test_combined_mode_one_call_per_row_and_a_missing_criterion(scripted_server,
                                                                tmp_path) -> None:
    def reply(body: dict) -> str:
        i = _question(body)
        if i == 0:
            return "not json"
        if i == 1:
            return '{"relevance": {"score": 5, "explanation": "ok"}}'  # completeness missing
        return json.dumps({"relevance": {"score": 1 + i % 5}, "completeness": i % 3})

    server = scripted_server(reply=reply)
    result = _judge(server, _rows(5), criteria=("relevance", "completeness"), mode="combined",
                    store=tmp_path / "s.sqlite")
    assert result.summary["mode"] == "combined" and result.summary["scoring"] == "generate"
    assert server.stats()["calls"] == 5                          # one call per row
    prompt = last_user_text(server.bodies[0])
    assert '"relevance": {"score": <one of 1, 2, 3, 4, 5>' in prompt
    assert '"completeness": {"score": <one of 0, 1, 2>' in prompt
    got = {(r["id"], r["criterion"]): (r["score"], r.get("reason")) for r in result.items}
    assert got[("r0", "relevance")] == got[("r0", "completeness")] == (None, "malformed_json")
    assert got[("r1", "relevance")] == (5, None)
    assert got[("r1", "completeness")] == (None, "missing_criterion")
    assert got[("r4", "relevance")] == (5, None) and got[("r4", "completeness")] == (1, None)
    # each call's usage is counted once (on its first criterion's row)
    assert result.summary["spend"]["calls"] == 5
    assert sum(1 for r in result.items if r.get("usage")) == 5


def test_choice_scoring_reads_logprobs_into_the_expected_score(scripted_server,
                                                               tmp_path) -> None:
    dist = {"1": 0.05, "2": 0.05, "3": 0.1, "4": 0.3, "5": 0.5}
    server = scripted_server(logprobs=lambda body: {k: math.log(v) for k, v in dist.items()})
    result = _judge(server, _rows(3), scoring="auto", store=tmp_path / "s.sqlite")
    assert result.summary["scoring"] == "choices"                  # auto, per-criterion
    body = server.bodies[0]
    assert body["logprobs"] is True and body["max_tokens"] == 1
    assert last_user_text(body).endswith("Answer with the score only: one of 1, 2, 3, 4, 5.")
    row = result.items[0]
    assert row["method"] == "choices:logprobs" and row["score"] == 5
    assert sum(row["score_probs"].values()) == pytest.approx(1.0)
    # by hand: 1*.05 + 2*.05 + 3*.1 + 4*.3 + 5*.5 = 4.15
    assert row["expected_score"] == pytest.approx(4.15)
    (expected,) = [h for h in result.headline if (h.group, h.metric) ==
                   ("relevance", "criterion_expected_score")]
    assert expected.value == pytest.approx(4.15)
    with pytest.raises(ragmeter.ConfigError, match="mode='combined'"):
        _judge(server, _rows(1), mode="combined", scoring="choices")


# ------------------------------------------------------------------ repeats


def test_repeats_measure_stability_and_reuse_the_first_run(scripted_server, tmp_path) -> None:
    def reply(body: dict) -> str:
        i, seed = _question(body), int(body.get("seed") or 0)
        score = 3 if i < 2 else 1 + (i + seed) % 5           # rows 0, 1 stable; others flip
        return json.dumps({"score": score})

    server = scripted_server(reply=reply)
    store = tmp_path / "s.sqlite"
    one = _judge(server, _rows(5), scoring="generate", temperature=0.7, store=store)
    assert server.stats()["calls"] == 5
    server.reset_counts()
    result = _judge(server, _rows(5), scoring="generate", temperature=0.7, repeats=3,
                    store=store)
    assert server.stats()["calls"] == 10                         # repeats 1 and 2 only
    assert {r["seed"] for r in server.bodies} == {1, 2}
    table = [[r["score"] for r in sorted((x for x in result.items if x["id"] == f"r{i}"),
                                         key=lambda x: x["repeat"])] for i in range(5)]
    st = result.summary["stability"]["relevance"]
    assert st["fleiss_kappa"] == pytest.approx(fleiss(table), abs=1e-12)
    assert st["flip_rate"] == pytest.approx(flip_rate(table)) == pytest.approx(3 / 5)
    # the headline stays the first repeat's, and the first run's numbers are reproduced
    assert [h.value for h in result.headline if h.metric == "criterion_score"][0] == \
        [h.value for h in one.headline if h.metric == "criterion_score"][0]
    (flips,) = [h for h in result.headline if h.metric == "flip_rate"]
    assert flips.value == pytest.approx(0.6) and not flips.higher_is_better
    assert "repeats:3" in result.signature and "temperature:0.7" in result.signature


# ------------------------------------------------------------------ validation


def test_reference_scores_validate_the_judge_on_its_card(scripted_server, tmp_path) -> None:
    rows = _rows(10)
    # a judge that agrees on relevance and inverts completeness
    def reply(body: dict) -> str:
        i = _question(body)
        if _criterion(body) == "relevance":
            return json.dumps({"score": min(5, 1 + i % 5 + (i == 3))})
        return json.dumps({"score": 2 - i % 3})

    server = scripted_server(reply=reply)
    result = _judge(server, rows, criteria=("relevance", "completeness"), scoring="generate",
                    reference_field="human", store=tmp_path / "s.sqlite")
    from tests.suites.criteria.test_criteria_metrics import qwk_by_formula

    judge_rel = [min(5, 1 + i % 5 + (i == 3)) for i in range(10)]
    human_rel = [1 + i % 5 for i in range(10)]
    rel = result.summary["criteria_results"]["relevance"]["validation"]
    assert rel["qwk"] == pytest.approx(qwk_by_formula(judge_rel, human_rel, (1, 2, 3, 4, 5)))
    cards = {c["judge"].rsplit(":", 1)[1]: c for c in result.judges}
    assert cards["relevance"]["validated"] and cards["relevance"]["validation"]["value"] == \
        rel["qwk"]
    assert "quadratic kappa with human" in cards["relevance"]["validation"]["metric"]
    comp = result.summary["criteria_results"]["completeness"]["validation"]
    assert comp["qwk"] < 0
    (alarm,) = result.alarms
    assert alarm["kind"] == "judge_at_chance" and alarm["criterion"] == "completeness"
    flagged = {h.group for h in result.headline if h.flag}
    assert flagged == {"completeness"}
    assert check_metric(result, "qwk", group="relevance", min=0.5)[0].ok
    # a scalar column named for several criteria is an error before any call
    server.reset_counts()
    bad = [{**r, "human": 3} for r in rows]
    with pytest.raises(ragmeter.InputError, match="named for several criteria"):
        _judge(server, bad, criteria=("relevance", "completeness"), reference_field="human")
    with pytest.raises(ragmeter.InputError, match="no row has the reference field 'humans'"):
        _judge(server, rows, reference_field="humans")
    with pytest.raises(ragmeter.InputError, match="is not a point of its scale"):
        _judge(server, [{**rows[0], "h": 3.5}], reference_field="relevance=h")
    assert server.stats()["calls"] == 0


# ------------------------------------------------------------------ dry run, --by


def test_dry_run_counts_tokens_and_money_and_calls_nothing(scripted_server, tmp_path) -> None:
    server = scripted_server()
    backend = _backend(server, price_prompt=2.0, price_completion=8.0)
    result = ragmeter.criteria.judge(_rows(4), criteria=["relevance", "correctness"],
                                     backend=backend, scoring="generate", repeats=2,
                                     dry_run=True, store=tmp_path / "s.sqlite")
    s = result.summary
    assert server.stats()["calls"] == 0 and result.items == []
    assert s["requests"] == s["calls"] == 4 * 2 * 2 and s["prompt_tokens"] > 0
    assert s["completion_tokens_max"] == 16 * 128                # max_tokens per call
    assert s["cost_usd_max"] == pytest.approx(
        (s["prompt_tokens"] * 2.0 + s["completion_tokens_max"] * 8.0) / 1e6)
    assert "judge:openai:scripted" in s["signature"] and "criteria:relevance@1:" in s[
        "signature"]
    assert "dry run: 16 requests" in result.dry_run_text


def test_by_groups_every_criterion_with_its_spend(scripted_server, tmp_path) -> None:
    server = scripted_server(reply=lambda body: json.dumps({"score": 1 + _question(body) % 5}))
    result = _judge(server, _rows(6), scoring="generate", by="topic",
                    store=tmp_path / "s.sqlite")
    values = result.summary["groups"]["values"]
    assert set(values) == {"relevance@brakes", "relevance@tyres"}
    assert values["relevance@brakes"]["metrics"]["criterion_score"] == pytest.approx(
        (2 + 4 + 1) / 3)                                         # rows 1, 3, 5
    assert result.summary["spend_by"]["brakes"]["calls"] == 3
    assert {h.group for h in result.headline} >= {"relevance", "relevance@brakes", "all"}
    assert all(r["topic"] in ("brakes", "tyres") for r in result.items)
    server.reset_counts()
    with pytest.raises(ragmeter.InputError, match="--by topik: no item has a field 'topik'"):
        _judge(server, _rows(6), scoring="generate", by="topik", store=tmp_path / "t.sqlite")
    assert server.stats()["calls"] == 0                          # checked before any call


# ------------------------------------------------------------------ the CLI


def _cli_backend(server, store) -> list[str]:
    return ["--backend", "openai", "--model", "scripted", "--base-url", server.url,
            "--store", str(store), "--max-retries", "0", "--concurrency", "2"]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_cli_writes_rows_and_a_record_and_fails_clearly(scripted_server, run_cli,
                                                        tmp_path) -> None:
    server = scripted_server(reply=lambda body: '{"score": 4, "explanation": "ok"}')
    data = _jsonl(tmp_path / "rows.jsonl", _rows(3))
    out, summary = tmp_path / "judged.jsonl", tmp_path / "summary.json"
    code, stdout, err = run_cli("criteria", "judge", data, "--criteria", "relevance",
                                "--criteria", "correctness", "--scoring", "generate",
                                "--reference-field", "relevance=human", "--out", out,
                                "--json", summary, *_cli_backend(server, tmp_path / "s.sqlite"))
    assert code == 0, err
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 6 and {r["criterion"] for r in rows} == {"relevance", "correctness"}
    assert "Criteria (per-criterion, generate" in stdout and "judge: openai:scripted" in stdout
    doc = json.loads(summary.read_text())
    assert doc["headline"] and doc["signature"].startswith("family:criteria|")
    runs = list((Path(os.environ["RAGMETER_HOME"]) / "runs").glob("*.json"))
    assert len(runs) == 1
    # a bad criteria file: exit 2, one line, no traceback, nothing called
    server.reset_counts()
    bad = tmp_path / "bad.yaml"
    bad.write_text("criteria:\n  - name: tone\n    question: Polite?\n    scale: {1: a}\n")
    code, _, err = run_cli("criteria", "judge", data, "--criteria", bad,
                           *_cli_backend(server, tmp_path / "s.sqlite"))
    assert code == 2 and "Traceback" not in err
    assert f'criteria: {bad}: field "tone.scale": has 1 point(s)' in err
    assert server.stats()["calls"] == 0
    code, _, err = run_cli("criteria", "judge", data, "--criteria", "relevanse",
                           *_cli_backend(server, tmp_path / "s.sqlite"))
    assert code == 2 and "Did you mean: relevance?" in err


def test_cli_exits_1_when_every_call_fails(scripted_server, run_cli, tmp_path) -> None:
    server = scripted_server(faults=Faults(rate_500=1.0))
    data = _jsonl(tmp_path / "rows.jsonl", _rows(2))
    code, _, err = run_cli("criteria", "judge", data, "--criteria", "relevance",
                           "--scoring", "generate", "--no-record",
                           *_cli_backend(server, tmp_path / "s.sqlite"))
    assert code == 1
    assert "error: criteria: no row was scored on any criterion (http_500 2)" in err


def test_http_faults_keep_every_row_and_a_rerun_pays_only_for_them(scripted_server,
                                                                   tmp_path) -> None:
    """429, 500, malformed bodies and cut connections (12% each, no retries): every row is
    kept, ok or unscored with the failure's reason; once the server recovers, a re-run pays
    for the failed calls only and never twice for a reply it got."""
    from collections import Counter

    faults = Faults(rate_429=0.12, rate_500=0.12, rate_malformed=0.12, rate_disconnect=0.12,
                    retry_after=0.01, seed=5)
    server = scripted_server(faults=faults, reply=lambda body: json.dumps(
        {"relevance": {"score": 4}, "completeness": 1} if "each of these" in
        last_user_text(body) else {"score": 1 + _question(body) % 2}))
    store = tmp_path / "s.sqlite"
    for mode in ("per-criterion", "combined"):
        options = {"mode": mode, "scoring": "generate", "store": store}
        first = _judge(server, _rows(12), criteria=("relevance", "completeness"),
                       backend_options={"max_retries": 0}, **options)
        reasons = {r.get("reason") for r in first.items if r["status"] != "ok"}
        assert len(first.items) == 24 and reasons and None not in reasons
        assert reasons <= {"http_429", "http_500", "bad_response", "connection"}
        server.faults = Faults()
        again = _judge(server, _rows(12), criteria=("relevance", "completeness"), **options)
        assert [r["status"] for r in again.items] == ["ok"] * 24
        assert max(Counter(server.answered_bodies).values()) == 1   # nothing paid twice
        server.faults = faults


def test_kill_and_resume_pays_for_no_call_twice(scripted_server, tmp_path) -> None:
    server = scripted_server(latency=0.05,
                             reply=lambda body: json.dumps({"score": 1 + _question(body) % 5}))
    n = 40
    data = _jsonl(tmp_path / "rows.jsonl", _rows(n))
    store = tmp_path / "s.sqlite"
    out = tmp_path / "judged.jsonl"
    cmd = [sys.executable, "-m", "ragmeter", "criteria", "judge", str(data), "--criteria",
           "relevance", "--criteria", "correctness", "--scoring", "generate", "--out",
           str(out), "--no-record", *_cli_backend(server, store)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(server.answered) < 20 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL and not out.exists()
    with Store(store) as s:
        done = {json.dumps(json.loads(r)["messages"], sort_keys=True) for (r,) in
                s._db.execute("SELECT request_json FROM calls")}
    assert 0 < len(done) < 2 * n
    time.sleep(0.2)  # let the server finish the killed client's calls in flight
    server.reset_counts()
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    second = {json.dumps(b["messages"], sort_keys=True) for b in server.bodies}
    assert not second & done                                   # nothing paid twice
    assert len(server.bodies) == 2 * n - len(done)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 2 * n and all(r["status"] == "ok" for r in rows)
    assert sum(1 for r in rows if (r.get("usage") or {}).get("cached_calls")) == len(done)


# ------------------------------------------------------------------ the Result contract


def test_result_contract_record_and_report(scripted_server, tmp_path) -> None:
    server = scripted_server(reply=lambda body: json.dumps({"score": 1 + _question(body) % 5}))
    result = _judge(server, _rows(6), criteria=("relevance",), scoring="generate",
                    reference_field="human", store=tmp_path / "s.sqlite")
    sig = result.signature
    crit = ragmeter.criteria.load_criteria("relevance")
    assert f"criteria:relevance@1:{crit.sources[0].sha256}" in sig
    assert "judge:openai:scripted" in sig and "prompt:criteria-judge-1" in sig
    assert result.prompt_versions == {"judge": "criteria-judge-1",
                                      "criteria": crit.label()}
    for h in result.headline:
        (check,) = check_metric(result, h.metric, group=h.group, min=-1e9)
        assert check.value == h.value
    record = result.save(str(tmp_path / "runs"))
    from ragmeter.reports.html import render_report

    page = render_report([record])
    assert "Criteria judged per-criterion (generate)" in page
    assert ">relevance<" in page and "could not read this result" not in page
    from ragmeter.view.listing import headlines

    shown = [h.label for h in headlines(record)]
    # the run list shows the family's main metric (normalized score) for every group
    assert "normalized score" in shown  # group "all" is shown without its name
    assert all(label.endswith("normalized score") for label in shown), shown
    assert "relevance normalized score" in shown
    from ragmeter.criteria._report import paired_units

    units = paired_units(result.items)
    assert units[("relevance", "score")] == {f"r{i}": float(1 + i % 5) for i in range(6)}
