"""Backends declare what they can do; nothing decides from a backend's name.

What is checked: the built-ins' registry mirrors equal their classes' declarations, the
runner reads the declarations (timeouts, the first-reply probe, release), the ``auto``
strategies follow ``choice_scoring``, and no source line compares a backend's name with a
literal (an AST scan of src/, with an explicit allow-list).
"""

from __future__ import annotations

import ast
import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest

from ragmeter.backends import (
    BaseBackend,
    Capabilities,
    ModelBackend,
    capabilities_of,
    from_options,
    scores_choices,
)
from ragmeter.backends import _registry as registry
from ragmeter.backends._types import Request, Response
from ragmeter.errors import ConfigError
from ragmeter.runner._run import RunnerConfig, run_requests

SRC = Path(__file__).resolve().parents[2] / "src" / "ragmeter"
FAST = dict(progress=False, backoff_base_s=0.001, backoff_max_s=0.01)


# ---------------------------------------------------------------- declarations


@pytest.mark.parametrize("name", ["local", "openai"])
def test_builtin_mirrors_equal_their_class_declarations(name):
    spec = registry.backend_spec(name)
    assert spec.mirror is not None
    assert spec.mirror == registry.backend_class(name).capabilities


def test_the_builtins_declare_what_they_do():
    local = registry.backend_spec("local").capabilities
    remote = registry.backend_spec("openai").capabilities
    assert (local.in_process, local.choice_scoring, local.batching, local.remote) == \
        (True, True, True, False)
    assert (remote.in_process, remote.choice_scoring, remote.batching, remote.remote) == \
        (False, None, False, True)


def test_capabilities_of_a_value_and_of_an_object_agree(tmp_path):
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF")
    value = ModelBackend(name="local", model=str(gguf))
    assert capabilities_of(value) == capabilities_of(value.instance())
    assert scores_choices(value) is True
    assert scores_choices(ModelBackend(name="openai", model="m")) is None


def test_batch_size_reaches_only_a_batching_backend(tmp_path):
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF")
    local = dict(ModelBackend(name="local", model=str(gguf), batch_size=4).recipe().kwargs)
    remote = dict(ModelBackend(name="openai", model="m", batch_size=4).recipe().kwargs)
    assert local["batch_size"] == 4 and "batch_size" not in remote
    assert remote["max_connections"] == 8 and "max_connections" not in local


@pytest.mark.parametrize("backend", [None, "local", "openai"])
def test_endpoint_takes_the_default_or_its_own_backend(backend, tmp_path, monkeypatch):
    (tmp_path / "endpoints.toml").write_text(
        '[endpoints.vllm]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "m"\n', encoding="utf-8")
    monkeypatch.setenv("RAGMETER_HOME", str(tmp_path))
    value = from_options(endpoint="vllm", backend=backend)
    assert (value.name, value.base_url, value.model) == ("openai", "http://127.0.0.1:1/v1", "m")


def test_endpoint_with_another_backend_is_a_config_error():
    with pytest.raises(ConfigError, match="--endpoint names its own backend"):
        from_options(endpoint="vllm", backend="mine")


# ---------------------------------------------------------------- the runner reads them


class Scripted(BaseBackend):
    """Answers every request after ``delay`` seconds; records start and end times."""

    name = "scripted"

    def __init__(self, capabilities: Capabilities, delay: float = 0.02) -> None:
        self.capabilities = capabilities
        self.delay = delay
        self.spans: list[tuple[float, float]] = []
        self.released = 0

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "model": "m"}

    async def complete(self, request: Request) -> Response:
        start = time.monotonic()
        await asyncio.sleep(self.delay)
        self.spans.append((start, time.monotonic()))
        return Response("a", choice_probs={"a": 1.0} if request.choices else None)

    async def release(self) -> None:
        self.released += 1


def _choice_requests(n: int) -> list[Request]:
    return [Request.chat(f"q{i}", [{"role": "user", "content": f"q{i}"}], choices=("a", "b"))
            for i in range(n)]


@pytest.mark.parametrize("choice_scoring, probed", [(None, True), (True, False), (False, False)])
def test_an_unknown_choice_scoring_is_learned_from_one_call_first(choice_scoring, probed):
    backend = Scripted(Capabilities(choice_scoring=choice_scoring))
    run_requests(_choice_requests(4), backend, None, RunnerConfig(concurrency=4, **FAST))
    spans = sorted(backend.spans)
    first_end = spans[0][1]
    # probed: the first call ended before any other started; else all four ran together
    assert all(start >= first_end for start, _ in spans[1:]) is probed
    assert backend.released == 1  # release() awaited once, at the end of the run


@pytest.mark.parametrize("in_process, status", [(True, "ok"), (False, "unscored")])
def test_only_an_in_process_backend_escapes_the_timeout(in_process, status):
    backend = Scripted(Capabilities(in_process=in_process), delay=0.2)
    out = run_requests(_choice_requests(1), backend, None,
                       RunnerConfig(timeout_s=0.02, max_retries=0, **FAST))
    assert out[0].status == status


# ---------------------------------------------------------------- auto strategies


def test_rgb_auto_follows_choice_scoring():
    from ragmeter.rgb._judged import resolve_method

    scoring = Scripted(Capabilities(choice_scoring=True))
    plain = Scripted(Capabilities())
    learned = Scripted(Capabilities(choice_scoring=None))
    # a backend that scores choices is the small local model: its detectors (refusal for Rej*,
    # errors for ED*/CR*, issue 27.3) agree with hand labels far better than its choices
    assert [resolve_method("auto", scoring, k) for k in ("reject", "fact")] == \
        ["detector", "detector"]
    assert [resolve_method("auto", b, k) for b in (plain, learned) for k in ("reject", "fact")] \
        == ["text"] * 4


@pytest.mark.parametrize("choice_scoring, prompt_file, mode", [
    (True, None, "choices"), (None, None, "choices"), (False, None, "generate"),
    (True, "judge_prompt.txt", "generate")])
def test_rubric_auto_follows_choice_scoring(choice_scoring, prompt_file, mode):
    from ragmeter.rubric._orchestrate import JudgeOptions

    options = JudgeOptions(prompt_file=prompt_file)
    assert options.mode(Scripted(Capabilities(choice_scoring=choice_scoring))) == mode
    assert JudgeOptions(scoring="generate").mode(Scripted(Capabilities(choice_scoring=True))) == "generate"


# ---------------------------------------------------------------- no decision from a name

# Comparisons of a name with "local"/"openai" that are not about backends, each with why.
ALLOWED_FILES = {
    "runner/engines/__init__.py": "engine names: the in-process engine is called 'local'",
}
BACKEND_NAMES = {"local", "openai"}


def _literals(node: ast.AST) -> set[str]:
    """The string constants of an operand: a literal, or the items of a tuple/list/set."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}


def name_comparisons(root: Path) -> list[str]:
    """``path:line: source`` of every comparison of a non-literal with a backend's name,
    except comparisons of an engine (the operand's source says ``engine``)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in ALLOWED_FILES:
            continue
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            if not any(_literals(o) & BACKEND_NAMES for o in operands):
                continue
            others = " ".join(ast.get_source_segment(text, o) or "" for o in operands
                              if not _literals(o))
            if "engine" in others:
                continue
            found.append(f"{rel}:{node.lineno}: {ast.get_source_segment(text, node)}")
    return found


def test_no_code_decides_from_a_backend_name():
    assert name_comparisons(SRC) == []


def test_the_name_scan_finds_what_it_looks_for(tmp_path):
    """The scan is not vacuous: the comparisons the capabilities replaced are found."""
    (tmp_path / "x.py").write_text(
        'if backend.name == "local": pass\n'
        'if name not in ("local", "openai"): pass\n'
        'if "openai" != choice: pass\n'
        'if config.engine == "local": pass\n'  # an engine: allowed
        'if name == "ray": pass\n', encoding="utf-8")
    assert [f.split(":")[1] for f in name_comparisons(tmp_path)] == ["1", "2", "3"]


PROBE = re.compile(r"getattr\([^)]*backend[^)]*,\s*[\"'](in_process|logprobs_supported|release|"
                   r"location|capabilities|choice_scoring)[\"']")


def test_no_code_probes_a_backend_for_undeclared_attributes():
    hits = [f"{p.relative_to(SRC)}:{i}" for p in SRC.rglob("*.py")
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if PROBE.search(line)]
    assert hits == []
