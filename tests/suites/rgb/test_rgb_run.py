"""``rgb run`` end to end: a scripted in-test backend (fast), the scripted OpenAI-compatible
server, and the real local model on a handful of instances (the demo's RGB part through
``ragmeter.demo``: tests/api/test_demo_api.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragmeter.backends._types import BaseBackend, Request, Response, Usage
from ragmeter.errors import BackendError
from ragmeter.io._samples import sample_path
from ragmeter.rgb._data import load_dataset
from ragmeter.rgb._demo import SAMPLE_FILES
from ragmeter.rgb._outputs import write_run_outputs
from ragmeter.rgb._prompts import load_prompts
from ragmeter.rgb._run import RgbRunConfig, run_rgb
from ragmeter.runner._run import RunnerConfig
from ragmeter.runner._store import Store


class FakeBackend(BaseBackend):
    """Answers with the first document line that names one of ``answers``; refuses without
    documents containing them; fails on ids listed in ``fail``.  Judge: Yes/No by rule."""

    name = "fake"

    def __init__(self, fail_text: str | None = None) -> None:
        self.fail_text = fail_text
        self.calls = 0

    def identity(self) -> dict[str, Any]:
        return {"backend": "fake", "model": "fake-1"}

    async def complete(self, request: Request) -> Response:
        self.calls += 1
        text = request.messages[-1].content
        if self.fail_text and self.fail_text in text:
            raise BackendError("http_500", "scripted failure", retryable=False)
        if request.choices:
            yes = "There are factual errors" in text or "Answer: I cannot" not in text
            probs = {"Yes": 0.8, "No": 0.2} if yes else {"Yes": 0.1, "No": 0.9}
            return Response(text=max(probs, key=probs.get), choice_probs=probs)
        docs = text.split("Documents:\n", 1)[-1].split("\n\nQuestion:", 1)[0]
        for word in ("Canberra", "Jane Austen", "seven", "1969", "Jupiter", "Paris", "Tokyo",
                     "nitrogen", "oxygen", "Leonardo", "Louvre", "Mars", "100", "Everest"):
            if word in docs:
                return Response(text=f"The answer is {word}.", usage=Usage(10, 5))
        if "Venus" in docs:
            return Response(text="There are factual errors in the provided documents. Mars.")
        return Response(text="I cannot answer the question because of insufficient "
                             "information in documents.")

    async def aclose(self) -> None:
        return None


def _datasets():
    return [load_dataset(sample_path(n)) for n in SAMPLE_FILES]


def test_run_with_fake_backend_writes_results(tmp_path: Path):
    backend = FakeBackend(fail_text="largest planet")
    store = Store(tmp_path / "s.sqlite")
    config = RgbRunConfig(temperature=0.0, judge=True, judge_method="choice", mode="lenient")
    result = run_rgb(_datasets(), load_prompts(), backend, store,
                     RunnerConfig(progress=False, max_retries=0), config)
    t = result.tables
    assert set(t["noise_robustness"]) == {"rgb_en", "rgb_zh"}
    assert set(t["noise_robustness"]["rgb_en"]) == {"0.0", "0.2", "0.4", "0.6", "0.8"}
    # instance 4 ("largest planet") fails at every setting: unscored, not dropped
    en0 = next(sc for s, sc in result.scores if s.name == "rgb_en/noise0.0")
    assert en0.coverage.total == 5 and en0.coverage.unscored == 1
    assert en0.coverage.reasons == {"http_500": 1}
    assert en0.metrics["n"] == 4
    assert t["rejection"]["rgb_en"]["rej"] is not None
    assert t["rejection"]["rgb_en"]["rej_judged"] is not None
    assert set(t["counterfactual"]["rgb_en_fact"]) >= {"acc", "acc_doc", "ed", "ed_judged", "cr"}
    assert "lenient" in t
    written = write_run_outputs(result, tmp_path / "out", plot=False)
    doc = json.loads(Path(written["results"]).read_text(encoding="utf-8"))
    assert doc["family"] == "rgb" and doc["signature"].startswith("family:rgb|")
    assert doc["coverage"]["unscored"] > 0
    rows = [json.loads(x) for x in Path(written["items"]).read_text().splitlines()]
    assert any(r["status"] == "unscored" and r["reason"] == "http_500" for r in rows)
    assert any("judge" in r for r in rows)
    # a second run is answered from the store (resume/cache), replay works
    calls = backend.calls
    again = run_rgb(_datasets(), load_prompts(), backend, store,
                    RunnerConfig(progress=False, replay=False, max_retries=0), config)
    assert again.tables == result.tables
    assert backend.calls - calls == sum(s.coverage.unscored for _, s in result.scores)
    store.close()


def test_cli_run_dry_run_and_replay_miss(run_cli, tmp_path: Path):
    # an unreachable endpoint: a dry run calls nothing (and loads no model)
    remote = ("--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    code, out, err = run_cli("rgb", "run", "--dry-run", "--limit", "1", *remote,
                             "--store", tmp_path / "s.sqlite")
    assert code == 0, err
    assert "dry run:" in out and "17 requests" in out
    code, out, err = run_cli("rgb", "run", "--replay", "--limit", "1", *remote,
                             "--store", tmp_path / "s.sqlite", "--out", tmp_path / "o")
    assert code == 2 and "error:" in err and "Traceback" not in err


def test_run_over_scripted_openai_server(scripted_server, tmp_path: Path, run_cli):
    def reply(body: dict) -> str:
        user = body["messages"][-1]["content"]
        if "Now judge:" in user:
            return ("No, the question is not addressed by the documents."
                    if "insufficient information" in user else "Yes, the question is "
                    "addressed by the documents.")
        return "The answer is Canberra." if "Canberra" in user else (
            "I cannot answer the question because of insufficient information in documents.")

    server = scripted_server(reply=reply)
    code, out, err = run_cli(
        "rgb", "run", "--data", sample_path("rgb_en.jsonl"), "--limit", "2",
        "--backend", "openai", "--model", "scripted", "--base-url", server.url,
        "--store", tmp_path / "s.sqlite", "--judge", "--out", tmp_path / "o", "--no-plot")
    assert code == 0, err
    doc = json.loads((tmp_path / "o" / "rgb_results.json").read_text(encoding="utf-8"))
    # instance 0 (Canberra) answered at noise < 1; instance 1 refused -> accuracy 0.5
    assert doc["tables"]["noise_robustness"]["rgb_en"]["0.0"] == 0.5
    # at noise 1.0 both refuse: Rej = 1.0; the text judge says "not addressed" for both
    assert doc["tables"]["rejection"]["rgb_en"] == {"rej": 1.0, "rej_judged": 1.0}
    assert doc["judge"]["method"] == "text"
    assert "Negative rejection" in out


@pytest.mark.local_model
def test_demo_on_local_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The real offline model over a handful of instances (one per file)."""
    import ragmeter.rgb._demo as demo

    monkeypatch.setattr(demo, "DEMO_NOISE_RATES", (0.0,))
    datasets = [load_dataset(sample_path(n)) for n in ("rgb_en.jsonl", "rgb_en_fact.jsonl")]
    from ragmeter.backends._registry import create_backend

    backend = create_backend("local")
    config = RgbRunConfig(noise_rates=(0.0,), temperature=0.0, max_tokens=24, judge=True,
                          limit=2)
    store = Store(tmp_path / "s.sqlite")
    result = run_rgb(datasets, load_prompts(), backend, store, RunnerConfig(progress=False),
                     config)
    store.close()
    assert result.coverage().unscored == 0
    # offline auto: the refusal detector judges Rej* (issue 12.8) and the error detector ED*
    # (issue 27.3), each measured better than the 135M model's yes/no.
    assert result.judge_info["method"] == "detector"
    for _, sc in result.scores:
        assert sc.metrics["accuracy"] is not None and 0.0 <= sc.metrics["accuracy"] <= 1.0
    written = write_run_outputs(result, tmp_path / "out", plot=False)
    assert Path(written["results"]).exists()
