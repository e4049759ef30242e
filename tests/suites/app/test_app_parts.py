"""The pure parts of ``app run``: field paths, request templates, reading a reply, reading the
test set, and the metrics (each expected value worked out by hand from the input beside it)."""

from __future__ import annotations

import json

import pytest

from ragmeter.app._metrics import latency_percentile, measure
from ragmeter.app._paths import PathMissing, parse_path
from ragmeter.app._reply import ReplyPaths, read_reply
from ragmeter.app._template import MissingPlaceholder, placeholders, render
from ragmeter.errors import ConfigError, InputError

REPLY = {"data": {"answer": "Canberra", "hits": [{"id": "d1", "text": "A"},
                                                 {"id": 7, "page_content": "B"}]},
         "choices": [{"message": {"content": "hi"}}], "n": 3}


@pytest.mark.parametrize(("path", "expected"), [
    ("data.answer", "Canberra"),
    ("$.data.answer", "Canberra"),
    ("choices[0].message.content", "hi"),
    ("choices.0.message.content", "hi"),
    ("choices[-1].message.content", "hi"),
    ("data.hits[*].id", ["d1", 7]),
    ("data.hits[1]", {"id": 7, "page_content": "B"}),
    ("n", 3),
])
def test_paths_find_values(path, expected):
    assert parse_path(path).get(REPLY) == expected


@pytest.mark.parametrize(("path", "message"), [
    # the path, the part of it that was found, and what was there instead
    ("data.answr", "data.answr: data has no 'answr' (its keys: answer, hits)"),
    ("choices[3].message", "choices[3].message: choices is a list of 1; it has no item 3"),
    ("data.answer.text", "data.answer.text: data.answer is the text 'Canberra', not an object"),
    ("data.hits[*].title", "data.hits[*].title: data.hits[0] has no 'title' (its keys: id, "
                           "text)"),
    ("n[*]", "n[*]: n is a number, not a list"),
    ("nope", "nope: the reply has no 'nope' (its keys: choices, data, n)"),
])
def test_paths_say_where_they_stop(path, message):
    with pytest.raises(PathMissing) as err:
        parse_path(path).get(REPLY)
    assert str(err.value) == message


@pytest.mark.parametrize("bad", ["", "a..b", ".a", "a.", "a[x]", "a[", "$"])
def test_malformed_paths_are_config_errors(bad):
    with pytest.raises(ConfigError, match="is not a field path"):
        parse_path(bad, "--answer-path")


def test_templates_fill_typed_whole_values_and_text_inside_strings():
    tpl = {"q": "{question}", "k": "{k}", "ids": "{ids}", "msg": "id={id} ids={ids}",
           "lit": "{{not}} {question}", "n": 1, "list": ["{question}", {"x": "{k}"}]}
    values = {"question": "Why?", "k": 5, "ids": ["a", "b"], "id": "q1"}
    assert placeholders(tpl) == ["question", "k", "ids", "id"]
    assert render(tpl, values) == {"q": "Why?", "k": 5, "ids": ["a", "b"],
                                   "msg": 'id=q1 ids=["a", "b"]', "lit": "{not} Why?", "n": 1,
                                   "list": ["Why?", {"x": 5}]}
    with pytest.raises(MissingPlaceholder) as err:
        render({"q": "{nope}"}, values)
    assert err.value.name == "nope"


def _reply(obj, **paths):
    text = obj if isinstance(obj, str) else json.dumps(obj)
    return read_reply(text, ReplyPaths.of(paths.get("answer"), paths.get("contexts"),
                                          paths.get("ids")))


@pytest.mark.parametrize(("obj", "paths", "expected"), [
    # the usual names, no path given: answer; contexts as texts; no ids
    ({"answer": "A", "contexts": ["c1", "c2"]}, {}, ("A", ["c1", "c2"], None)),
    # response + documents as objects with ids: the ids come from the objects
    ({"response": "A", "documents": [{"id": "d1", "content": "c1"}, {"doc_id": 2,
                                                                     "text": "c2"}]},
     {}, ("A", ["c1", "c2"], ["d1", "2"])),
    # one context as text; a number as the answer
    ({"result": 42, "context": "only one"}, {}, ("42", ["only one"], None)),
    # explicit paths
    (REPLY, {"answer": "data.answer", "contexts": "data.hits", "ids": "data.hits[*].id"},
     ("Canberra", ["A", "B"], ["d1", "7"])),
    # null contexts: none retrieved
    ({"answer": "A", "sources": None}, {"contexts": "sources"}, ("A", [], None)),
    # plain text with the whole-reply path
    ("just text", {"answer": "$"}, ("just text", None, None)),
])
def test_replies_give_answer_contexts_ids(obj, paths, expected):
    r = _reply(obj, **paths)
    assert r.ok, r.detail
    assert (r.answer, r.contexts, r.ids) == expected


@pytest.mark.parametrize(("obj", "paths", "reason", "detail"), [
    ("<html>oops</html>", {}, "not_json", "the reply is not JSON: '<html>oops</html>'"),
    ({"msg": "x"}, {}, "no_answer", "the reply has none of answer, response, output, result, "
                                    "text (its keys: msg)"),
    ({"answer": ["a"]}, {}, "bad_answer", "the answer is a list, expected text"),
    ({"answer": None}, {}, "bad_answer", "the answer is null, expected text"),
    ({"answer": "A"}, {"contexts": "hits"}, "no_contexts", "contexts path 'hits': the reply "
                                                          "has no 'hits' (its keys: answer)"),
    ({"answer": "A", "contexts": [1]}, {}, "bad_contexts", "item 0 is a number, expected text"),
    ({"answer": "A", "contexts": [{"score": 1}]}, {}, "bad_contexts",
     "item 0 is an object without a text"),
    ({"answer": "A", "ids": [None]}, {}, "bad_ids", "item 0 is null, expected an id"),
])
def test_a_reply_without_what_was_asked_is_unscored_with_why(obj, paths, reason, detail):
    r = _reply(obj, **paths)
    assert (r.ok, r.reason) == (False, reason)
    assert detail in r.detail
    assert r.answer is None and r.contexts is None


def test_the_test_set_is_read_under_its_aliases(tmp_path):
    from ragmeter.app._rows import ALIASES, read_cases
    from ragmeter.io import FieldMap

    rows = [
        # RGB's layout: query, a list of one gold answer, passages kept as other columns
        {"id": 0, "query": "Capital?", "answer": ["Canberra"], "positive": ["p"]},
        # rubric build's layout: the reference is "answer", the gold passage "context"
        {"id": "b#1", "question": "Q2", "answer": "A2", "context": "C2", "source": "kb.md",
         "relevance_score": 5},
        # a multilingual layout, with an earlier answer that is not carried over
        {"sample_id": "m1", "sample_lang": "de", "question": "Q3", "gold_answer": "G3",
         "pred_answer": "old", "system": "old-system", "topic": "t"},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cases = read_cases(path, FieldMap().with_aliases(ALIASES))
    assert [(c.id, c.question, c.reference, c.lang) for c in cases] == [
        ("0", "Capital?", "Canberra", None), ("b#1", "Q2", "A2", None), ("m1", "Q3", "G3", "de")]
    assert [dict(c.extra) for c in cases] == [{"positive": ["p"]},
                                              {"context": "C2", "source": "kb.md",
                                               "relevance_score": 5},
                                              {"topic": "t"}]
    # the user's mapping wins over the aliases
    mapped = read_cases([{"query": "q", "topic": "t"}],
                        FieldMap({"question": "topic"}).with_aliases(ALIASES))
    assert mapped[0].question == "t" and dict(mapped[0].extra) == {"query": "q"}


@pytest.mark.parametrize(("rows", "message"), [
    ([{"id": 1, "text": "x"}], 'field "question": is missing (required). Found fields: id, '
                               "text. Fix: give each row a question"),
    ([{"id": 1, "question": " "}], 'field "question": is empty'),
    ([{"id": 1, "question": "a"}, {"id": 1, "question": "b"}],
     'line 2 of t.jsonl: field "id": repeats id \'1\' (first on line 1)'),
])
def test_test_set_errors_name_the_row(tmp_path, rows, message):
    import ragmeter

    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError) as err:
        ragmeter.app.run(path, lambda q: "x", run=ragmeter.RunOptions(progress=False))
    assert message in str(err.value).replace(str(tmp_path) + "/", "")


def test_metrics_by_hand():
    rows = [{"status": "ok", "latency_ms": 10.0, "retrieved_contexts": ["a", "b"]},
            {"status": "ok", "latency_ms": 20.0, "retrieved_contexts": []},
            {"status": "ok", "latency_ms": 40.0, "retrieved_contexts": ["c"]},
            {"status": "unscored", "latency_ms": None, "retrieved_contexts": None}]
    m = measure(rows, contexts=True)
    assert m["metrics"]["answered"] == 0.75
    assert m["metrics"]["with_contexts"] == pytest.approx(2 / 3)
    assert m["metrics"]["contexts_per_answer"] == 1.0          # (2 + 0 + 1) / 3
    assert m["metrics"]["latency_p50_ms"] == 20.0
    # numpy's linear rule: rank 0.95 * (3 - 1) = 1.9 -> 20 + 0.9 * (40 - 20) = 38
    assert m["metrics"]["latency_p95_ms"] == pytest.approx(38.0)
    assert m["metrics"]["latency_mean_ms"] == pytest.approx(70 / 3)
    assert m["n"]["answered"] == 4 and m["n"]["latency_p95_ms"] == 3
    lo, hi = m["ci95"]["answered"]
    assert 0.3 < lo < 0.75 < hi < 1.0                          # Wilson, 3 of 4
    assert latency_percentile([], 50) is None
    assert measure([], contexts=False)["metrics"]["answered"] is None
