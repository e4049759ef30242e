"""Failure is visible (issue 25 item 5), decided once for every verb that calls a model
(ragmeter._verb._failure):

* a run in which every model call failed, or that kept nothing, raises RunFailedError in
  Python (the Result rides along; the message has the cause, the most common reason with an
  example, and the fix in Python words) and exits 1 at the command line with one line in
  flags, instead of a table of blanks and exit 0;
* a run that failed in part returns normally and the command line prints the failure count
  and the most common reason beside the coverage;
* a dry run's every line is an upper bound (the RGB judge's estimate said "12 requests, 9
  calls" and counted a 256-token answer as 128 tokens)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from ragmeter.errors import RunFailedError
from ragmeter.io._samples import sample_path
from tests.api.verbs import RUBRIC_ROWS
from tests.servers.scripted_openai import Faults, last_user_text

DEAD = "http://127.0.0.1:9/v1"  # nothing listens on the discard port


def _dead() -> Any:
    return ragmeter.backends.openai("m", base_url=DEAD, max_retries=0)


def _calls(tmp_path: Path) -> dict[str, Any]:
    return {"store": str(tmp_path / "s.sqlite"), "progress": False}


UNREACHABLE = {
    "rgb.judge": lambda b, kw: ragmeter.rgb.judge(
        [{"id": i, "prediction": "x"} for i in range(5)], data=sample_path("rgb_en.jsonl"),
        noise_rate=1.0, judge_method="text", backend=b, **kw),
    "rgb.run": lambda b, kw: ragmeter.rgb.run(sample_path("rgb_en.jsonl"), noise_rates=[0.4],
                                              no_rejection=True, backend=b, **kw),
    "trace.label": lambda b, kw: ragmeter.trace.label(sample_path("trace_labelled.jsonl"),
                                                      strategy="json", backend=b, **kw),
    "trace.run": lambda b, kw: ragmeter.trace.run(sample_path("trace_labelled.jsonl"),
                                                  strategy="json", backend=b, **kw),
    "multilingual.judge": lambda b, kw: ragmeter.multilingual.judge(
        sample_path("multilingual_answers.jsonl"), scoring="generate", backend=b, **kw),
    "rubric.judge": lambda b, kw: ragmeter.rubric.judge(RUBRIC_ROWS, scoring="generate",
                                                        backend=b, **kw),
    "generate": lambda b, kw: ragmeter.generate(
        [{"id": "a", "prompt": "hello"}, {"id": "b", "prompt": "again"}], backend=b, **kw),
}


@pytest.mark.parametrize("verb", sorted(UNREACHABLE))
def test_every_call_failed_raises_with_cause_example_and_python_fix(verb: str,
                                                                    tmp_path: Path) -> None:
    with pytest.raises(RunFailedError) as caught:
        UNREACHABLE[verb](_dead(), _calls(tmp_path))
    err = caught.value
    text = str(err)
    assert text.startswith(f"{verb}: all ") and "model calls failed" in text, text
    assert "most often connection" in text and "127.0.0.1:9" in text  # the example's detail
    assert "base_url=" in text and "--base-url" not in text  # Python words in Python
    assert "--base-url" in err.cli_message() and "base_url=" not in err.cli_message()
    assert err.exit_code == 1 and len(text.splitlines()) == 1
    result = err.result  # nothing is lost: the items say what happened to each
    assert result.coverage["scored"] == 0 and result.coverage["reasons"].get("connection")
    assert result.summary["spend"]["failed_calls"] > 0


def test_rgb_run_against_an_unreachable_endpoint_exits_1_in_flags(run_cli, tmp_path: Path
                                                                  ) -> None:
    out = tmp_path / "o"
    code, stdout, err = run_cli("rgb", "run", "--data", sample_path("rgb_en.jsonl"),
                                "--noise-rates", "0.4", "--no-rejection", "--backend",
                                "openai", "--model", "m", "--base-url", DEAD, "--max-retries",
                                "0", "--store", tmp_path / "s.sqlite", "--out", out)
    assert code == 1 and "Traceback" not in err
    last = err.strip().splitlines()[-1]  # after what the run shows and writes: one line
    assert last.startswith("error: rgb run: all 5 of its model calls failed (most often "
                           "connection: 5; e.g. ") and "--base-url" in last
    items = [json.loads(line) for line in (out / "rgb_items.jsonl").read_text().splitlines()]
    assert [i["reason"] for i in items] == ["connection"] * 5  # nothing lost


def _no_grade(body: dict) -> str:
    return "I would rather not grade this."


def test_a_judge_whose_replies_are_all_unusable_kept_nothing(scripted_server, tmp_path: Path,
                                                             run_cli) -> None:
    server = scripted_server(reply=_no_grade)
    backend = ragmeter.backends.openai("m", base_url=server.url)
    with pytest.raises(RunFailedError) as caught:
        ragmeter.rubric.judge(RUBRIC_ROWS, scoring="generate", backend=backend,
                              **_calls(tmp_path))
    text = str(caught.value)
    assert "it kept nothing: none of its 9 item(s) could be scored" in text
    assert "most often no_grade_found: 9" in text and "a larger model" in text
    data = tmp_path / "a.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RUBRIC_ROWS), encoding="utf-8")
    code, _, err = run_cli("rubric", "judge", data, "--out", tmp_path / "j.jsonl", "--scoring",
                           "generate", "--backend", "openai", "--model", "m", "--base-url",
                           server.url, "--store", tmp_path / "s.sqlite", "--no-record")
    assert code == 1 and "--model" in err
    assert err.strip().splitlines()[-1].startswith("error: rubric judge: it kept nothing")
    assert len((tmp_path / "j.jsonl").read_text().splitlines()) == 9  # the items, with reasons


def test_build_failures_are_run_failures() -> None:
    assert issubclass(ragmeter.rubric.BuildFailedError, RunFailedError)


def test_a_partly_failed_run_prints_its_failures_beside_the_coverage(scripted_server, run_cli,
                                                                     tmp_path: Path) -> None:
    server = scripted_server(faults=Faults(rate_500=0.5, seed=3))
    requests = tmp_path / "r.jsonl"
    requests.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"question {i}"}) + "\n"
                                for i in range(10)), encoding="utf-8")
    code, _, err = run_cli("generate", requests, "--out", tmp_path / "o.jsonl", "--backend",
                           "openai", "--model", "m", "--base-url", server.url, "--max-retries",
                           "0", "--store", tmp_path / "s.sqlite")
    failed = server.stats()["outcomes"].get("500", 0) or sum(
        1 for line in (tmp_path / "o.jsonl").read_text().splitlines()
        if json.loads(line)["status"] != "ok")
    assert code == 0 and 0 < failed < 10
    assert (f"warning: coverage {10 - failed}/10 scored ({failed} unscored, most often "
            f"http_500: {failed}); e.g. ") in err
    assert "run again to retry the failed calls" in err
    # Python: the Result, not an error
    result = ragmeter.generate(str(requests), backend=ragmeter.backends.openai(
        "m", base_url=server.url, max_retries=0), store=str(tmp_path / "s2.sqlite"))
    assert 0 < result.coverage["scored"] < 10


def test_rgb_dry_run_judge_estimate_is_an_upper_bound(scripted_server, tmp_path: Path) -> None:
    """Every line of the estimate bounds what the run then does: judge calls (no two
    not-yet-generated answers are the same call) and judge prompt tokens (a placeholder of
    max_tokens tokens stands for each answer)."""
    from ragmeter.backends._tokens import count_message_tokens

    def reply(body: dict) -> str:
        text = last_user_text(body)
        if "Now judge:" in text:
            return "Yes, the question is addressed by the documents."
        return "word " * 40  # answers shorter than max_tokens

    server = scripted_server(reply=reply)
    backend = ragmeter.backends.openai("gpt-4o-mini", base_url=server.url)
    options = {"data": [sample_path("rgb_en.jsonl"), sample_path("rgb_en_fact.jsonl")],
               "noise_rates": [0.0], "judge": True, "max_tokens": 64, "backend": backend,
               **_calls(tmp_path)}
    dry = ragmeter.rgb.run(dry_run=True, **options)
    judge = dry.summary["judge"]
    assert judge["calls"] == judge["requests"] == dry.summary["judge_placeholders"] > 1
    assert "calls to make" in dry.dry_run_text  # type: ignore[attr-defined]
    ragmeter.rgb.run(**options)
    judged = [b for b in server.bodies if "Now judge:" in last_user_text(b)]
    assert 0 < len(judged) <= judge["calls"]
    real = sum(count_message_tokens(b["messages"], "openai", "gpt-4o-mini") for b in judged)
    assert real <= judge["prompt_tokens"]
