"""Criteria files are checked before any model is called: every problem is one line naming
the file, the criterion, the field, what was expected and the fix; the shipped files load;
the hash in the signature follows the criteria, not the file's layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.criteria import load_criteria, shipped_names
from ragmeter.errors import InputError, UnknownNameError

GOOD = """\
version: 2
criteria:
  - name: tone
    question: Is the answer polite?
    scale:
      1: Rude.
      2: Neutral.
      3: Polite.
"""


def _write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_files_load_with_their_scales() -> None:
    assert shipped_names() == ["completeness", "correctness", "relevance"]
    crit = load_criteria(["relevance", "correctness", "completeness"])
    assert crit.names == ("relevance", "correctness", "completeness")
    rel, cor, comp = crit.criteria
    assert rel.points == (1, 2, 3, 4, 5) and rel.pass_at == 4
    assert rel.inputs == ("question", "response")
    assert cor.inputs == ("question", "reference", "response")
    assert comp.points == (0, 1, 2) and comp.pass_at == 2
    assert all(c.examples for c in crit)
    assert [s.name for s in crit.sources] == ["relevance", "correctness", "completeness"]
    assert all(len(s.sha256) == 12 and s.version == "1" for s in crit.sources)


def test_a_file_its_defaults_and_a_single_criterion_form(tmp_path) -> None:
    crit = load_criteria(_write(tmp_path, GOOD))
    (tone,) = crit.criteria
    assert tone.scale == ((1, "Rude."), (2, "Neutral."), (3, "Polite."))
    assert tone.pass_at == 3  # the least point above the middle (2) of 1..3
    assert tone.inputs == ("question", "response")
    assert crit.sources[0].version == "2" and crit.sources[0].name == "c"
    single = _write(tmp_path, "name: tone\nquestion: Is it polite?\nscale: {0: No., 1: Yes.}\n",
                    "one.yaml")
    (one,) = load_criteria(single).criteria
    assert one.points == (0, 1) and one.pass_at == 1


def test_json_and_list_scales_read_like_yaml(tmp_path) -> None:
    doc = {"version": 2, "criteria": [{"name": "tone", "question": "Is the answer polite?",
                                       "scale": [{"score": 1, "anchor": "Rude."},
                                                 {"score": 2, "anchor": "Neutral."},
                                                 {"score": 3, "anchor": "Polite."}]}]}
    from_json = load_criteria(_write(tmp_path, json.dumps(doc), "c.json"))
    from_yaml = load_criteria(_write(tmp_path, GOOD))
    assert from_json.criteria == tuple(
        type(c)(**{**c.__dict__, "source": from_json.criteria[0].source})
        for c in from_yaml.criteria)
    # the hash is of the criteria, not of the file's format or comments
    assert from_json.sources[0].sha256 == from_yaml.sources[0].sha256
    commented = load_criteria(_write(tmp_path, "# a comment\n" + GOOD, "d.yaml"))
    assert commented.sources[0].sha256 == from_yaml.sources[0].sha256
    reworded = load_criteria(_write(tmp_path, GOOD.replace("Rude.", "Very rude."), "e.yaml"))
    assert reworded.sources[0].sha256 != from_yaml.sources[0].sha256
    assert load_criteria(doc).criteria[0].points == (1, 2, 3)  # a mapping in Python


BAD = [
    # (file text, expected pieces of the one-line message)
    ("criteria:\n  - name: tone\n    question: Polite?\n    scale:\n      high: Polite.\n"
     "      low: Rude.\n", ['field "tone.scale"', "point 'high' is not a whole number",
                         "Fix: number the scale's points"]),
    ("criteria:\n  - name: tone\n    question: Polite?\n    scale:\n      1: Rude.\n",
     ['field "tone.scale"', "has 1 point(s); expected two or more"]),
    ("criteria:\n  - name: tone\n    question: Polite?\n    scale:\n      1: Rude.\n      2: ''\n",
     ['field "tone.scale.2"', "expected a non-empty text", "Fix: write what this point means"]),
    ("criteria:\n  - name: tone\n    scale: {1: a, 2: b}\n",
     ['field "tone.question"', "is missing; expected a non-empty text"]),
    ("criteria:\n  - question: Polite?\n    scale: {1: a, 2: b}\n",
     ['field "criteria[1].name"', "is missing", "Fix: give the criterion a name"]),
    ("criteria:\n  - name: tone\n    question: Polite?\n    scales: {1: a, 2: b}\n",
     ['field "tone.scales"', "did you mean 'scale'?", "Fix: use only name, question"]),
    ("criteria:\n  - name: tone\n    question: Polite?\n    scale: {1: a, 2: b}\n    pass_at: 1\n",
     ['field "tone.pass_at"', "expected a point of the scale above its lowest (2)"]),
    ("criteria:\n  - name: tone\n    question: Polite?\n    scale: {1: a, 2: b}\n"
     "    examples:\n      - question: Hi?\n        score: 2\n",
     ['field "tone.examples[1].response"', "is missing"]),
    ("criteria:\n  - name: tone\n    question: Polite?\n    scale: {1: a, 2: b}\n"
     "    examples:\n      - {question: q, response: r, score: 7}\n",
     ['field "tone.examples[1].score"', "is 7, not a point of the scale (1, 2)"]),
    ("criteria:\n  - name: all\n    question: Polite?\n    scale: {1: a, 2: b}\n",
     ['field "all.name"', "the name of the group across criteria"]),
    ("criteria:\n  - name: tone@x\n    question: Polite?\n    scale: {1: a, 2: b}\n",
     ['field "tone@x.name"', "expected letters, digits, _ or -"]),
    ("criteria:\n  - {name: tone, question: q, scale: {1: a, 2: b}}\n"
     "  - {name: tone, question: q, scale: {1: a, 2: b}}\n",
     ["names the criterion 'tone' twice"]),
    ("criteria: []\n", ['field "criteria"', "expected a non-empty list"]),
    ("- just a list\n", ["expected a mapping with a list of criteria"]),
    ("criteria:\n  - name: tone\n    question: [unclosed\n", ["is not valid YAML", "at line 4, column 1"]),
    ("criteria:\n  - name: tone\n    question: Polite?\n    scale: {1: a, 2: b}\n"
     "    inputs: [question, question]\n", ['field "tone.inputs"', "names 'question' twice"]),
]


@pytest.mark.parametrize(("text", "pieces"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_every_problem_is_one_line_with_file_criterion_field_and_fix(tmp_path, text,
                                                                     pieces) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as err:
        load_criteria(path)
    message = str(err.value)
    assert message.startswith(f"criteria: {path}: ") and "\n" not in message
    for piece in pieces:
        assert piece in message


def test_invalid_json_names_line_and_column(tmp_path) -> None:
    path = _write(tmp_path, '{"criteria": [\n  {"name": "x",}\n]}', "c.json")
    with pytest.raises(InputError, match=r"is not valid JSON \(.* at line 2, column"):
        load_criteria(path)


def test_unknown_names_and_clashes_across_files(tmp_path) -> None:
    with pytest.raises(UnknownNameError, match="Did you mean: relevance"):
        load_criteria("relevanse")
    with pytest.raises(InputError, match="does not exist"):
        load_criteria(str(tmp_path / "missing.yaml"))
    clash = _write(tmp_path, "name: relevance\nquestion: q\nscale: {1: a, 2: b}\n")
    with pytest.raises(InputError, match="which an earlier criteria file names too"):
        load_criteria(["relevance", clash])
