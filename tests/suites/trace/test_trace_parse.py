"""Judge-reply parsing on canned replies (written for these tests, shaped like RAGBench's
labelling schema, arXiv:2407.11005 Appendix 7.4)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragmeter.trace._parse import (
    ParsedLabels,
    ParseFailure,
    extract_json,
    normalize_key,
    parse_labels,
)

DOC_KEYS = ["0a", "0b", "0c", "1a", "1b"]
RESP_KEYS = ["a", "b"]
VALID = {
    "relevance_explanation": "Document 0 names the team.",
    "all_relevant_sentence_keys": ["0a", "0b", "1a"],
    "overall_supported_explanation": "Sentence a is supported; b is not.",
    "overall_supported": False,
    "sentence_support_information": [
        {"response_sentence_key": "a", "explanation": "0a says so.",
         "supporting_sentence_keys": ["0a"], "fully_supported": True},
        {"response_sentence_key": "b", "explanation": "Nothing says so.",
         "supporting_sentence_keys": [], "fully_supported": False},
    ],
    "all_utilized_sentence_keys": ["0a"],
}
TEXT = json.dumps(VALID, indent=2)


def ok(reply: str) -> ParsedLabels:
    parsed = parse_labels(reply, DOC_KEYS, RESP_KEYS)
    assert isinstance(parsed, ParsedLabels), parsed
    return parsed


@pytest.mark.parametrize("reply", [
    TEXT,
    "```json\n" + TEXT + "\n```",
    "```\n" + TEXT + "\n```\nHope this helps!",
    "Here is the JSON:\n" + TEXT + "\nDone.",
], ids=["plain", "fenced-json", "fenced-bare", "prose-around"])
def test_valid_replies(reply):
    p = ok(reply)
    assert p.relevant_keys == ("0a", "0b", "1a")
    assert p.utilized_keys == ("0a",)
    assert p.unsupported_keys == ("b",)
    assert p.overall_supported is False
    assert (p.dropped_keys, p.duplicate_keys, p.repaired) == (0, 0, False)
    cols = p.to_columns()
    assert cols["adherence_score"] is False
    assert cols["sentence_support_information"][0]["supporting_sentence_keys"] == ["0a"]


def test_keys_with_trailing_dots_and_case():
    reply = TEXT.replace('"0a", "0b", "1a"', '"0a.", " 0B. ", "(1a)"').replace(
        '"response_sentence_key": "a"', '"response_sentence_key": "a."')
    p = ok(reply)
    assert p.relevant_keys == ("0a", "0b", "1a")
    assert p.support[0]["response_sentence_key"] == "a"


def test_unknown_keys_dropped_and_counted():
    data = dict(VALID, all_relevant_sentence_keys=["0a", "7z", "0a", "banana"],
                all_utilized_sentence_keys=["0a", "2b"])
    p = ok(json.dumps(data))
    assert p.relevant_keys == ("0a",)
    assert p.dropped_keys == 3 and p.duplicate_keys == 1
    assert "7z" in p.dropped_examples


def test_special_support_strings_are_kept():
    data = json.loads(TEXT)
    data["sentence_support_information"][1]["supporting_sentence_keys"] = ["general"]
    data["sentence_support_information"][1]["fully_supported"] = "true"
    p = ok(json.dumps(data))
    assert p.support[1]["supporting_sentence_keys"] == ["general"]
    assert p.unsupported_keys == ()


def test_truncated_reply_is_repaired_when_complete_enough():
    cut = TEXT[: TEXT.rindex('"0a"') + len('"0a"')]  # cut inside all_utilized_sentence_keys
    p = ok(cut)
    assert p.repaired and p.utilized_keys == ("0a",)


@pytest.mark.parametrize("reply, reason", [
    ("I cannot help with that.", "no_json"),
    (TEXT[: TEXT.index('"all_utilized_sentence_keys"') - 5], "missing_field"),
    (TEXT[:200], "missing_field"),
    (json.dumps({k: v for k, v in VALID.items() if k != "all_relevant_sentence_keys"}),
     "missing_field"),
    (json.dumps(dict(VALID, sentence_support_information=VALID["sentence_support_information"][:1])),
     "missing_support"),
    (json.dumps(dict(VALID, sentence_support_information="none")), "missing_field"),
], ids=["prose", "truncated-before-utilized", "truncated-early", "no-relevant", "one-verdict",
        "support-not-list"])
def test_failures_are_unscored_with_reason(reply, reason):
    p = parse_labels(reply, DOC_KEYS, RESP_KEYS)
    assert isinstance(p, ParseFailure) and p.reason == reason and p.detail


def test_null_fully_supported_counts_as_unsupported():
    data = json.loads(TEXT)
    data["sentence_support_information"][0]["fully_supported"] = None
    assert ok(json.dumps(data)).unsupported_keys == ("a", "b")


@pytest.mark.parametrize("raw, key", [("0b.", "0b"), (" 1C ", "1c"), ("'a'", "a"),
                                      ("(2d)", "2d"), ("a.", "a"), ("0aa", "0aa")])
def test_normalize_key(raw, key):
    assert normalize_key(raw) == key


@given(st.text(max_size=200))
def test_extract_json_never_raises(text):
    obj, _ = extract_json(text)
    assert obj is None or isinstance(obj, dict)


@given(st.integers(min_value=1, max_value=len(TEXT)))
def test_any_truncation_gives_labels_or_a_reason(cut):
    p = parse_labels(TEXT[:cut], DOC_KEYS, RESP_KEYS)
    assert isinstance(p, (ParsedLabels, ParseFailure))
    if isinstance(p, ParsedLabels):
        assert set(p.relevant_keys) <= set(DOC_KEYS)


def test_unknown_and_repeated_response_sentence_entries_are_dropped_and_counted():
    """Support entries for a response key that was not shown ("z"), a second entry for "a"
    and a non-object item are each dropped and counted in dropped_keys (issue 15)."""
    data = json.loads(TEXT)
    info = data["sentence_support_information"]
    data["sentence_support_information"] = [
        *info,
        {"response_sentence_key": "z", "explanation": "", "supporting_sentence_keys": [],
         "fully_supported": True},
        {**info[0], "fully_supported": False},  # a repeat of "a": the first verdict wins
        "not an object",
    ]
    p = ok(json.dumps(data))
    assert p.dropped_keys == 3
    assert [s["response_sentence_key"] for s in p.support] == ["a", "b"]
    assert p.support[0]["fully_supported"] is True
    assert ok(TEXT).dropped_keys == 0


# Boolean spellings of a verdict (issue 24.6: "fully_supported": "yes" was read as false).
# Expected values are the spellings' plain meaning; "invalid" means unscored with a reason.
VERDICTS = [
    (True, True), (False, False), ("true", True), ("false", False), ("True", True),
    ("FALSE", False), ("yes", True), ("no", False), ("Yes", True), ("NO", False),
    (" yes ", True), ("1", True), ("0", False), (1, True), (0, False), (1.0, True),
    (None, None),
    ("maybe", "invalid"), ("partially", "invalid"), ("", "invalid"), (2, "invalid"),
    ("y", "invalid"), (["yes"], "invalid"), ({"value": True}, "invalid"),
]


@pytest.mark.parametrize("value, expected", VERDICTS, ids=[repr(v) for v, _ in VERDICTS])
def test_verdict_spellings_through_the_reply_parser(value, expected):
    data = json.loads(TEXT)
    data["sentence_support_information"][0]["fully_supported"] = value
    p = parse_labels(json.dumps(data), DOC_KEYS, RESP_KEYS)
    if expected == "invalid":
        assert isinstance(p, ParseFailure) and p.reason == "invalid_verdict"
        assert "response sentence a" in p.detail
        return
    assert isinstance(p, ParsedLabels)
    assert p.support[0]["fully_supported"] is expected
    # "b" is false in VALID; "a" is unsupported unless its verdict is true (null counts)
    assert p.unsupported_keys == (("b",) if expected is True else ("a", "b"))
    assert p.to_columns()["adherence_score"] is False


@pytest.mark.parametrize("value, expected", VERDICTS, ids=[repr(v) for v, _ in VERDICTS])
def test_verdict_spellings_through_a_labels_file_row(value, expected):
    from ragmeter.io import Row
    from ragmeter.trace._data import parse_label_row

    row = Row({"id": "r1", "documents_sentences": [[["0a", "The Nets play in Brooklyn."]]],
               "all_relevant_sentence_keys": ["0a"], "all_utilized_sentence_keys": ["0a"],
               "sentence_support_information": [{"response_sentence_key": "a",
                                                 "fully_supported": value}]},
              1, "line", "labels.jsonl")
    label = parse_label_row(row)
    if expected == "invalid":
        assert label.unscored is not None and label.unscored[0] == "invalid_verdict"
        assert "fully_supported" in label.unscored[1]
        return
    assert label.unscored is None and label.fully_supported == (expected,)
    assert label.unsupported_keys == (() if expected is True else ("a",))


def test_overall_supported_that_is_no_verdict_is_left_empty():
    data = dict(VALID, overall_supported="somewhat")
    assert ok(json.dumps(data)).overall_supported is None
    assert ok(json.dumps(dict(VALID, overall_supported="no"))).overall_supported is False
