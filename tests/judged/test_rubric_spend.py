"""``rubric judge`` reports what its judge calls spent, in total and per ``--by`` group
(issue 15.9), over the scripted server, on RAGaliq's released en/ru answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragmeter
from ragmeter.runner._store import Store
from tests.conftest import shared
from tests.judged.helpers import coin, server_money

LOG = "eval_res_questions_{0}_Qwen2.5-7B-Instruct_multilingual-e5-large-instruct_bge-reranker-v2-m3_{0}.json"


def _rows(n: int = 10) -> list[dict]:
    out = []
    for lang in ("en", "ru"):
        data = json.loads(shared("ragaliq", "logs", "eval", LOG.format(lang)).read_text("utf-8"))
        out += [{"question": r["question"], "reference": r["true_answer"],
                 "response": r["generated_answer"], "lang": lang} for r in data[:n]]
    return out


def _reply(body: dict) -> str:
    grade = 5 if coin(body["messages"][-1]["content"], p=0.5) else 3
    return f"Feedback: scripted. [RESULT] {grade}"


def test_rubric_judge_spend_by_lang(scripted_server, tmp_path: Path) -> None:
    server = scripted_server(reply=_reply)
    backend = ragmeter.backends.openai("scripted", base_url=server.url, price_prompt=1.0,
                                       price_completion=4.0)
    rows = _rows()
    res = ragmeter.rubric.judge(rows, scoring="generate", by=["lang"], backend=backend,
                                store=Store(tmp_path / "s.sqlite"), repeats=2, progress=False)
    assert server.stats()["calls"] == 2 * len(rows)
    p, c, usd = server_money(server.answered_bodies, _reply, 1.0, 4.0)
    sp = res.summary["spend"]
    assert (sp["calls"], sp["prompt_tokens"], sp["completion_tokens"]) == (2 * len(rows), p, c)
    assert sp["cost_usd"] == pytest.approx(usd)
    groups = res.summary["groups"]
    assert {g["lang"] for g in groups} == {"en", "ru"}
    for key in ("calls", "prompt_tokens", "completion_tokens"):
        assert sum(g["spend"][key] for g in groups) == sp[key]
    assert sum(g["spend"]["cost_usd"] for g in groups) == pytest.approx(usd)


def test_generate_spend_counts_cached_at_original_cost(scripted_server, tmp_path: Path) -> None:
    """``generate``: this run's calls and, on a rerun, the cached ones at their first cost."""
    def reply(body: dict) -> str:
        return "an answer of five words"

    server = scripted_server(reply=reply)
    backend = ragmeter.backends.openai("scripted", base_url=server.url, price_prompt=2.0,
                                       price_completion=8.0)
    requests = [{"id": f"q{i}", "prompt": f"question number {i} " * (i + 1)} for i in range(6)]
    store = Store(tmp_path / "s.sqlite")
    first = ragmeter.generate(requests, backend=backend, store=store, progress=False)
    p, c, usd = server_money(server.answered_bodies, reply, 2.0, 8.0)
    assert (first.summary["spend"]["prompt_tokens"], first.summary["spend"]["completion_tokens"]
            ) == (p, c)
    assert first.summary["spend"]["cost_usd"] == pytest.approx(usd)
    assert first.summary["stats"]["cost_usd"] == pytest.approx(usd)  # the runner's counter
    again = ragmeter.generate(requests, backend=backend, store=store, progress=False)
    assert again.summary["spend"]["calls"] == 0 and again.summary["spend"]["cost_usd"] == 0
    assert again.summary["spend"]["cached"]["calls"] == 6
    assert again.summary["spend"]["cached"]["cost_usd"] == pytest.approx(usd)
