"""Non-finite numbers are refused where they enter (issue 29.3): ``nan``, ``inf``, ``-inf``
and values that overflow a float (``1e999``, a 400-digit integer) pass every range comparison
(``nan < 0`` and ``nan > 1`` are both false, ``inf >= 0`` is true), so they used to fail late:
``--price-in nan`` paid for every call and then crashed.  Each door now refuses them at once,
before any call, through one check (``ragmeter._util.number_problem``): the CLI's number flags,
the Python API's option values (``ModelBackend``, the option groups, a request's sampling
parameters, the runner's configuration), the web form's number fields, and numbers in data
files and in-memory rows."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import ragmeter
from ragmeter.errors import ConfigError, InputError
from ragmeter.io._samples import sample_path

BAD = ["nan", "inf", "-inf", "1e999", "NaN", "Infinity"]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ------------------------------------------------------------------ the CLI's flags

# Every number flag that is a float, with a command that has it (FILE: a request file; URL:
# the scripted server).  The paid ones are the point: nothing may be called.
FLAGS = [
    (["generate", "FILE", "--out", "OUT", "URL"], "--price-in"),
    (["generate", "FILE", "--out", "OUT", "URL"], "--price-out"),
    (["generate", "FILE", "--out", "OUT", "URL"], "--timeout"),
    (["generate", "FILE", "--out", "OUT", "URL"], "--rpm"),
    (["generate", "FILE", "--out", "OUT", "URL"], "--tpm"),
    (["generate", "FILE", "--out", "OUT", "URL"], "--ray-num-gpus"),
    (["rubric", "judge", "FILE", "--out", "OUT", "URL"], "--temperature"),
    (["rgb", "score", "FILE", "--data", "FILE"], "--noise-rate"),
    (["rgb", "build", "--data", "FILE", "--noise-rate", "0", "--out", "OUT"], "--correct-rate"),
    (["trace", "label", "FILE", "--out", "OUT", "URL"], "--threshold"),
    (["trace", "fit", "FILE", "--out", "OUT"], "--threshold"),
    (["runs", "prune"], "--older-than"),
]


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize(("argv", "flag"), FLAGS, ids=[f"{a[0]}-{a[1]}{f}" for a, f in FLAGS])
def test_a_non_finite_flag_fails_at_once(argv, flag, value, tmp_path, run_cli,
                                         scripted_server):
    server = scripted_server()
    data = _jsonl(tmp_path / "in.jsonl", [{"id": "r1", "prompt": "hello"}])
    out = tmp_path / "out.jsonl"
    args: list[str] = []
    for a in argv:
        args += ({"FILE": [str(data)], "OUT": [str(out)],
                  "URL": ["--backend", "openai", "--model", "m", "--base-url", server.url]}
                 .get(a, [a]))
    code, _, err = run_cli(*args, flag, value)
    assert code == 2, err
    assert "Traceback" not in err
    assert f"Invalid value for '{flag}'" in err and "must be a finite number" in err, err
    assert server.stats()["calls"] == 0 and not out.exists()


def test_the_global_line_limit_flag(run_cli, tmp_path):
    code, _, err = run_cli("--max-line-mb", "inf", "runs", "prune", "--runs-dir", tmp_path)
    assert code == 2 and "'--max-line-mb'" in err and "finite" in err and "Traceback" not in err


# ------------------------------------------------------------------ the Python API's options

@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 10 ** 400])
@pytest.mark.parametrize("name", ["price_prompt", "price_completion", "timeout", "rpm", "tpm",
                                  "concurrency", "max_retries", "batch_size", "ray_num_gpus",
                                  "ray_workers"])
def test_a_backend_value_refuses_non_finite_options(name, value):
    with pytest.raises(ConfigError, match=rf"^backends: {name}= must be a finite number"):
        ragmeter.backends.openai("m", base_url="http://127.0.0.1:9/v1", **{name: value})


def test_backend_options_keep_their_ranges_and_whole_numbers():
    assert ragmeter.backends.local(concurrency=8.0).concurrency == 8  # a whole float is fine
    for kwargs, message in (({"concurrency": 0}, "concurrency= must be at least 1, got 0"),
                            ({"concurrency": 2.5}, "concurrency= must be a whole number"),
                            ({"rpm": 0}, "rpm= must be above 0"),
                            ({"timeout": "30"}, "timeout= must be a number, got '30'"),
                            ({"price_prompt": -1}, "price_prompt= must be at least 0")):
        with pytest.raises(ConfigError, match=message):
            ragmeter.backends.local(**kwargs)


def test_a_nan_price_pays_for_nothing(scripted_server, tmp_path):
    """The case of the issue, from Python: the value is refused before the first call."""
    server = scripted_server()
    with pytest.raises(ConfigError):
        backend = ragmeter.backends.openai("m", base_url=server.url, price_prompt=math.nan)
        ragmeter.generate([{"id": "r1", "prompt": "hi"}], backend=backend,
                          store=tmp_path / "s.sqlite")
    assert server.stats()["calls"] == 0


@pytest.mark.parametrize(("group", "kwargs", "message"), [
    ("OutputOptions", {"resamples": math.inf}, "resamples= must be a finite number"),
    ("OutputOptions", {"seed": math.nan}, "seed= must be a finite number"),
    ("OutputOptions", {"resamples": 10.5}, "resamples= must be a whole number"),
    ("EngineOptions", {"ray_workers": math.inf}, "ray_workers= must be a finite number"),
])
def test_option_groups_refuse_non_finite_values(group, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        getattr(ragmeter, group)(**kwargs)


def test_the_runner_configuration_is_a_backstop():
    from ragmeter.runner._types import RunnerConfig

    for kwargs in ({"price_prompt_per_mtok": math.nan}, {"timeout_s": math.inf},
                   {"rpm": math.nan}, {"concurrency": 10 ** 400}):
        with pytest.raises(ConfigError, match="must be a finite number"):
            RunnerConfig(**kwargs)


def test_a_non_finite_sampling_parameter_is_refused_before_any_call(scripted_server, tmp_path):
    server = scripted_server()
    answers = _jsonl(tmp_path / "a.jsonl", [{"id": "1", "question": "q?", "reference": "r",
                                             "response": "r"}])
    with pytest.raises(ConfigError, match="temperature= must be a finite number, got nan"):
        ragmeter.rubric.judge(answers, backend=ragmeter.backends.openai("m", base_url=server.url),
                              store=tmp_path / "s.sqlite", scoring="generate",
                              temperature=math.nan)
    assert server.stats()["calls"] == 0


# ------------------------------------------------------------------ the web form's fields

@pytest.mark.parametrize("value", ["inf", "nan", "1e999", "-inf"])
def test_a_form_number_field_refuses_non_finite_values(value, tmp_path):
    from ragmeter.view.forms import validate
    from ragmeter.view.verbs import spec_of

    _jsonl(tmp_path / "requests.jsonl", [{"id": "r1", "prompt": "hi"}])
    with pytest.raises(ConfigError) as err:
        validate(spec_of("generate"), {"requests": "requests.jsonl", "price_prompt": value},
                 [tmp_path])
    assert "USD / M prompt tokens must be a finite number" in str(err.value)


# ------------------------------------------------------------------ numbers in data

ROW = {"sample_id": "s1", "sample_lang": "en", "system": "direct", "gold_answer": "Ottawa",
       "pred_answer": "Ottawa"}


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-2E+400",
                                    "1" * 400, "9" * 5000])
@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_non_finite_number_in_a_data_file_is_named(number, suffix, tmp_path, run_cli):
    body = json.dumps(ROW)[:-1] + f', "translate_tokens": {number}}}'
    path = tmp_path / f"answers{suffix}"
    path.write_text(f"[{body}]" if suffix == ".json" else body + "\n", encoding="utf-8")
    code, _, err = run_cli("multilingual", "score", path, "--no-record")
    assert code == 2 and "Traceback" not in err, err
    unit = "row" if suffix == ".json" else "line"
    assert f'{unit} 1 of {path}: field "translate_tokens": holds the number' in err
    assert "not finite" in err and "Fix: write null" in err


def test_a_non_finite_number_deep_in_a_big_file_is_named(tmp_path):
    """Past the first chunk of the streaming JSON reader and in a nested list."""
    from ragmeter.io import read_rows

    rows = [{"id": i, "pad": "x" * 200, "scores": [0.5, 1.5]} for i in range(8000)]
    text = json.dumps(rows).replace('"id": 7000, "pad": "' + "x" * 200 + '", "scores": [0.5',
                                    '"id": 7000, "pad": "' + "x" * 200 + '", "scores": [1e400')
    path = tmp_path / "big.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=r'row 7001 of .*: field "scores": holds the number '
                                         r'1e400'):
        read_rows(path)


def test_finite_numbers_are_read_as_before(tmp_path):
    from ragmeter.io import read_rows

    path = _jsonl(tmp_path / "ok.jsonl", [{"a": 1e308, "b": -1.5e-400, "c": 10 ** 300,
                                           "d": "1e999 in text", "e": 1e100}])
    assert read_rows(path)[0].data == {"a": 1e308, "b": -0.0, "c": 10 ** 300,
                                       "d": "1e999 in text", "e": 1e100}


@pytest.mark.parametrize("value", [math.inf, -math.inf])
def test_an_infinite_number_in_memory_is_named(value):
    with pytest.raises(InputError, match=r'index 0 of <list of dicts>: field '
                                         r'"translate_tokens": is -?inf, which is not a finite number'):
        ragmeter.multilingual.score([{**ROW, "translate_tokens": value}])


def test_a_huge_integer_in_memory_is_refused_by_the_number_reader():
    with pytest.raises(InputError, match='field "translate_tokens": is a number too large'):
        ragmeter.multilingual.score([{**ROW, "translate_tokens": 10 ** 400}])


def test_a_nan_in_a_dataframe_is_still_a_missing_value():
    """pandas marks a missing cell with NaN: it stays None (no cost), as before."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame([{**ROW, "translate_tokens": float("nan")}])
    result = ragmeter.multilingual.score(frame)
    assert result.items[0]["cost"] is None


# ------------------------------------------------------------------ a family's own options

@pytest.mark.parametrize(("call", "message"), [
    (lambda: ragmeter.trace.label(str(sample_path("trace_labelled.jsonl")), strategy="choice",
                                  threshold=math.nan, dry_run=True),
     "trace: threshold= must be a finite number"),          # a family group, via gather()
    (lambda: ragmeter.rubric.judge([{"id": "1", "question": "q", "reference": "r",
                                     "response": "r"}], temperature=math.inf, dry_run=True),
     "rubric: temperature= must be a finite number"),
    (lambda: ragmeter.trace.fit(str(sample_path("trace_labelled.jsonl")), threshold=math.nan),
     "trace: threshold= must be a finite number"),
    (lambda: ragmeter.reliability.score(str(sample_path("reliability_annotations.csv")),
                                        qc="qc_maria", min_applicable=math.nan),
     "reliability: min_applicable= must be a finite number"),
])
def test_a_family_option_refuses_non_finite_values(call, message):
    with pytest.raises(ConfigError, match=message):
        call()
