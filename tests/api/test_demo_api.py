"""``ragmeter.demo()``: the demo as a function; ``ragmeter demo`` prints what it returns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ragmeter
from ragmeter._demo._demo import MULTILINGUAL_OPTIONS, RELIABILITY_OPTIONS, RGB_OPTIONS


def _cli_records(runs: Path) -> dict[str, dict[str, Any]]:
    """``{family: record}`` of the run records in ``runs``."""
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in runs.glob("*.json")]
    return {d["family"]: d for d in docs}


def test_demo_api_gives_the_cli_summaries_without_a_model(tmp_path: Path, run_cli,
                                                           _isolated_home: Path) -> None:
    code, out, err = run_cli("demo", "--out", tmp_path / "cli", "--no-model")
    assert code == 0, err
    cli = _cli_records(_isolated_home / "runs")
    result = ragmeter.demo(tmp_path / "api", model=False, runs_dir=tmp_path / "runs")
    assert result.rgb is None and [r.family for r in result.results] == [
        "multilingual", "reliability"]
    # the same numbers as the CLI's run records, and as the family functions called alone
    assert set(cli) == set(result.summaries)
    for family, summary in result.summaries.items():
        assert cli[family]["result"] == json.loads(json.dumps(summary)), family
    alone = ragmeter.multilingual.score(result.multilingual.inputs[0].path,
                                        **MULTILINGUAL_OPTIONS)
    assert alone.summary == result.multilingual.summary
    assert result.multilingual.coverage["scored"] == 36
    assert result.reliability.summary["qc"] == list(RELIABILITY_OPTIONS["qc"])
    # one record per part, and the report made from them
    assert sorted(p.stem for p in (tmp_path / "runs").glob("*.json")) == sorted(result.run_ids)
    page = result.report.read_text(encoding="utf-8")
    assert result.report == tmp_path / "api" / "report.html"
    assert all(run_id in page for run_id in result.run_ids)
    assert "multilingual" in result._repr_html_()
    # the CLI's console shows the API's result: the run ids it printed are its records
    assert all(f"run {r} recorded" in err for r in (p.stem for p in (_isolated_home / "runs").glob("*.json")))
    assert f"report: {(tmp_path / 'cli' / 'report.html').resolve()}" in out.replace("\n", "")


def test_demo_rgb_part_is_rgb_run_with_the_demo_settings(scripted_server,
                                                          tmp_path: Path) -> None:
    """The RGB part through a scripted endpoint: every sample file and setting, the files
    ``rgb run --out`` writes, and a second run answered from the store."""
    server = scripted_server()
    backend = ragmeter.backends.openai("scripted", base_url=server.url)
    store = tmp_path / "s.sqlite"
    first = ragmeter.demo(tmp_path / "out", backend=backend, store=store, progress=False,
                          runs_dir=tmp_path / "runs")
    assert first.rgb is not None
    doc = first.rgb.summary
    assert doc["coverage"]["unscored"] == 0 and doc["coverage"]["scored"] == 49
    assert len(first.rgb.items) == 49
    for key in ("results", "items", "plot"):
        assert Path(first.rgb_outputs[key]).exists(), key
    assert [r.family for r in first.results] == ["rgb", "multilingual", "reliability"]
    assert len(first.run_ids) == 3 and "rgb" in first.report.read_text(encoding="utf-8")
    calls = server.calls
    assert calls > 49  # answers plus judge calls
    again = ragmeter.demo(tmp_path / "out2", backend=backend, store=store, progress=False,
                          runs_dir=tmp_path / "runs")
    assert server.calls == calls  # everything from the store
    assert again.rgb is not None and again.rgb.summary["tables"] == doc["tables"]
    alone = ragmeter.rgb.run(None, backend=backend, store=store, progress=False, **RGB_OPTIONS)
    assert server.calls == calls
    assert alone.summary["tables"] == doc["tables"]
    assert alone.summary["signature"] == doc["signature"]


def test_ademo_is_awaitable(tmp_path: Path) -> None:
    import asyncio

    result = asyncio.run(ragmeter.ademo(tmp_path / "out", model=False,
                                        runs_dir=tmp_path / "runs"))
    assert result.multilingual.coverage["scored"] == 36 and result.report.exists()


@pytest.mark.parametrize("name", ["demo", "ademo"])
def test_demo_is_public(name: str) -> None:
    assert name in ragmeter.__all__ and callable(getattr(ragmeter, name))
