"""``ragmeter generate`` without click (issue 26.5): ``ragmeter.cli._fast`` reads the command
lines it fully understands into the same keyword arguments as click's parse, and leaves every
other line to click (so help, errors and their messages stay click's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ragmeter.cli._fast as fast
from ragmeter.cli._fast import generate_args


def _click_parse(argv: list[str]) -> tuple[str, str, dict[str, Any]]:
    from ragmeter.cli.generate import generate

    params = dict(generate.make_context("generate", list(argv[1:])).params)
    return params.pop("requests_path"), params.pop("out_path"), params


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"id": "q1", "prompt": "hi"}) + "\n", encoding="utf-8")
    return str(requests), str(tmp_path / "out.jsonl")


UNDERSTOOD = [
    [],
    ["--backend", "openai", "--base-url", "http://127.0.0.1:8000/v1", "--model", "m",
     "--concurrency", "32"],
    ["--backend=openai", "--model=Qwen/Qwen2.5-7B", "--timeout", "5", "--max-retries", "0"],
    ["--rpm", "60", "--tpm", "1000.5", "--price-in", "0", "--price-out", "2.5", "--dry-run"],
    ["--price-prompt", "1", "--price-completion", "0.25", "--replay", "--batch-size", "256"],
    ["--engine", "ray", "--ray-address", "auto", "--ray-workers", "3",
     "--ray-cpus-per-worker", "2", "--ray-num-gpus", "0.5", "--ray-batch-size", "4"],
    ["--endpoint", "vllm", "--model", "", "--concurrency", "4096", "--max-retries", "100"],
    ["--timeout", "0.001", "--ray-num-gpus", "0", "--engine", "local"],
]


@pytest.mark.parametrize("extra", UNDERSTOOD)
@pytest.mark.parametrize("order", ["out first", "requests first"])
def test_a_line_it_reads_gives_what_click_gives(files: tuple[str, str], extra: list[str],
                                                order: str) -> None:
    requests, out = files
    head = (["--out", out, requests] if order == "out first" else [requests, "--out", out])
    argv = ["generate", *head, *extra]
    got = generate_args(argv)
    assert got is not None, argv
    assert got == _click_parse(argv)
    assert {k: type(v) for k, v in got[2].items()} == {
        k: type(v) for k, v in _click_parse(argv)[2].items()}  # 5 is 5.0, but an int


def test_the_store_option_is_read_as_click_reads_it(files: tuple[str, str],
                                                    tmp_path: Path) -> None:
    requests, out = files
    argv = ["generate", requests, "--out", out, "--store", str(tmp_path / "s.sqlite")]
    assert generate_args(argv) == _click_parse(argv)


LEFT_TO_CLICK = [
    ["--help"], ["-h"], ["--out"], ["--concurrency", "0"], ["--concurrency", "4097"],
    ["--concurrency", "-1"], ["--concurrency", "8.0"], ["--concurrency", " 8"],
    ["--concurrency", "1_0"], ["--concurrency", "٣"], ["--rpm", "0"], ["--timeout", "0"],
    ["--rpm", "nan"], ["--rpm", "inf"], ["--rpm", "1e3"], ["--price-in", "-0"],
    ["--engine", "Ray"], ["--replay=1"], ["--dry-run", "--dry-run"],
    ["--price-in", "1", "--price-prompt", "2"], ["--model", "a", "--model", "b"],
    ["--bogus"], ["--mod", "m"], ["--", "x"], ["extra.jsonl"], ["-"], ["--model", "-m"],
    ["--max-retries", "101"], ["--batch-size", "0"], ["--ray-workers", "0"],
]


@pytest.mark.parametrize("extra", LEFT_TO_CLICK)
def test_any_other_line_is_left_to_click(files: tuple[str, str], extra: list[str]) -> None:
    requests, out = files
    assert generate_args(["generate", requests, "--out", out, *extra]) is None


def test_files_click_would_refuse_are_left_to_click(files: tuple[str, str],
                                                    tmp_path: Path) -> None:
    requests, out = files
    assert generate_args(["generate", requests]) is None  # no --out
    assert generate_args(["generate", "--out", out]) is None  # no REQUESTS
    assert generate_args(["generate", str(tmp_path), "--out", out]) is None  # a folder
    assert generate_args(["generate", requests, "--out", str(tmp_path)]) is None
    assert generate_args(["generate", requests, "--out", requests]) is None  # out is an input
    same = ["generate", requests, "--out", out, "--store", out]
    assert generate_args(same) == _click_parse(same)  # neither exists yet: click accepts it
    Path(out).write_text("", encoding="utf-8")
    assert generate_args(same) is None  # now the output is an input
    with pytest.raises(Exception, match="--store"):
        _click_parse(same)
    assert generate_args(["--max-line-mb", "1", "generate", requests, "--out", out]) is None
    assert generate_args(["trace", "score", requests]) is None
    missing = str(tmp_path / "missing.jsonl")  # click accepts it too; reading says why not
    assert generate_args(["generate", missing, "--out", out]) == _click_parse(
        ["generate", missing, "--out", out])


def _both(run_cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
          *args: str) -> list[tuple[int, str, str]]:
    """The same line through the fast path and through click (fast path off), each with a
    fresh $RAGMETER_HOME (named the same in the output)."""
    outs = []
    for side in ("fast", "click"):
        home = tmp_path / side
        monkeypatch.setenv("RAGMETER_HOME", str(home))
        with monkeypatch.context() as m:
            if side == "click":
                m.setattr(fast, "generate_args", lambda argv: None)
            code, out, err = run_cli(*args)
        outs.append((code, out, err.replace(str(home), "<home>")))
    return outs


def test_both_paths_print_the_same(run_cli: Any, monkeypatch: pytest.MonkeyPatch,
                                   tmp_path: Path, files: tuple[str, str],
                                   scripted_server: Any) -> None:
    requests, out = files
    server = scripted_server()
    line = ["generate", requests, "--out", out, "--backend", "openai", "--base-url",
            server.url, "--model", "scripted", "--concurrency", "2"]
    fast_run, click_run = _both(run_cli, monkeypatch, tmp_path, *line)
    assert fast_run == click_run and fast_run[0] == 0 and "wrote 1 responses" in fast_run[2]
    fast_run, click_run = _both(run_cli, monkeypatch, tmp_path, *line, "--dry-run")
    assert fast_run == click_run and fast_run[0] == 0 and fast_run[1]
    bad = tmp_path / "bad.jsonl"  # a bad row far down: the same one-line error, exit 2
    bad.write_text("".join(json.dumps({"id": f"q{i}", "prompt": "p"}) + "\n"
                           for i in range(499)) + '{"id": "q499"}\n', encoding="utf-8")
    fast_run, click_run = _both(run_cli, monkeypatch, tmp_path, "generate", str(bad), "--out",
                                out, "--backend", "openai", "--base-url", server.url,
                                "--model", "scripted")
    assert fast_run == click_run and fast_run[0] == 2 and "line 500" in fast_run[2]
    assert fast_run[2].count("\n") == 1


@pytest.mark.parametrize("stop", [KeyboardInterrupt, EOFError])
def test_an_interrupt_ends_both_paths_alike(run_cli: Any, monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path, files: tuple[str, str],
                                            stop: type[BaseException]) -> None:
    import ragmeter.cli._generate_run as body

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise stop

    monkeypatch.setattr(body, "run_generate_command", interrupted)
    requests, out = files
    fast_run, click_run = _both(run_cli, monkeypatch, tmp_path, "generate", requests, "--out",
                                out, "--dry-run")
    assert fast_run == click_run == (130, "", "\nAborted.\n")


def _last_line_of(code: str, tmp_path: Path, files: tuple[str, str]) -> str:
    """The last line ``code`` prints in a new process, run with a dry-run generate line as
    its arguments."""
    import subprocess
    import sys

    from tests.conftest import REPO

    requests, out = files
    done = subprocess.run([sys.executable, "-c", code, "generate", requests, "--out", out,
                           "--dry-run", "--backend", "openai", "--model", "m"],
                          env={"PYTHONPATH": str(REPO / "src"), "RAGMETER_HOME":
                               str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip(), done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_generate_through_main_imports_no_click(tmp_path: Path, files: tuple[str, str]) -> None:
    code = ("import sys\nfrom ragmeter.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('click' in sys.modules)\n")
    assert _last_line_of(code, tmp_path, files) == "False"


def test_the_entry_point_freezes_what_its_imports_left(tmp_path: Path,
                                                       files: tuple[str, str]) -> None:
    """Only the process's own command line (main() with no argv) calls gc.freeze: a caller
    of main([...]) (the tests, an embedding program) keeps its collector as it was."""
    code = ("import gc, sys\nfrom ragmeter.cli import main\n"
            "line = sys.argv[1:]\n"
            "try:\n    main(line)\nexcept SystemExit:\n    pass\n"
            "first = gc.get_freeze_count()\n"
            "sys.argv[1:] = line\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(first, gc.get_freeze_count() > 0)\n")
    assert _last_line_of(code, tmp_path, files) == "0 True"
