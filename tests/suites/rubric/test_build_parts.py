"""The pure parts of ``rubric build``: reply parsers, chunking, sampling, duplicates, the
degenerate-critic alarm, prompt files and output naming."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.rubric._build import degenerate_critic, normalize_question
from ragmeter.rubric._build_prompts import BuildPrompts, parse_critique, parse_generation
from ragmeter.rubric._build_translate import language_path
from ragmeter.rubric._chunking import chunk_text, sample_chunks
from tests.conftest import shared


@pytest.mark.parametrize("reply, question, answer", [
    ("Question: What is X?\nAnswer: Y", "What is X?", "Y"),
    # The format of the common question-generation prompts (HF cookbook, RAGaliq).
    ("Factoid question: Where is it?\nAnswer: In Moscow.\n\nExtra notes", "Where is it?",
     "In Moscow."),
    ("**Question:** Who?\n**Answer:** Boris", "Who?", "Boris"),
    ('Here: {"question": "When?", "answer": 1999}', "When?", "1999"),
])
def test_parse_generation_ok(reply, question, answer):
    p = parse_generation(reply)
    assert p.ok and (p.question, p.answer) == (question, answer)


@pytest.mark.parametrize("reply, reason", [
    ("I cannot help with that.", "no_question"),
    ("Question: What?", "no_answer"),
    ("Question: \nAnswer: x", "empty_question"),
    ("Question: What?\nAnswer:   ", "empty_answer"),
])
def test_parse_generation_failures(reply, reason):
    p = parse_generation(reply)
    assert not p.ok and p.reason == reason and p.question is None


@pytest.mark.parametrize("reply, rating, evaluation", [
    ("Evaluation: Clear.\nRating: 4", 4, "Clear."),
    ("Evaluation: fine\nTotal rating: 5", 5, "fine"),
    ("The question is vague. Score: 2/5", 2, "The question is vague."),
    ('{"evaluation": "meh", "rating": "3"}', 3, "meh"),
    ("Rating: 4. A higher score 5 would be too much.", 4, ""),  # the labelled one counts
    ("Rating: 4.0", 4, ""),
])
def test_parse_critique_ok(reply, rating, evaluation):
    p = parse_critique(reply)
    assert p.ok and p.rating == rating and p.evaluation == evaluation


@pytest.mark.parametrize("reply, reason", [
    ("", "empty_reply"),
    ("Looks good to me.", "no_rating"),
    ("Rating: 4.5", "not_integer"),
    ("Rating: 0", "off_scale"),
    ("Rating: 7", "off_scale"),
    ("Score: 8/10", "off_scale"),
])
def test_parse_critique_never_defaults(reply, reason):
    p = parse_critique(reply)
    assert not p.ok and p.rating is None and p.reason == reason


def test_sections_chunker_joins_headings_and_cuts_long_sections():
    text = "# Title\n\n## A\n" + "word " * 30 + "\n\n## B\nshort\n\n## C\n" + \
        ("para one " * 20 + "\n\n") * 5
    chunks = chunk_text(text, "sections", chunk_size=400, min_chars=20)
    assert chunks[0].startswith("# Title\n\n## A")  # a bare heading joins the next section
    assert all(len(c) <= 400 for c in chunks)
    assert not any(c.startswith("## B") for c in chunks)  # 14 characters < min_chars
    assert sum(c.count("para one") for c in chunks) == 100  # nothing lost when cut


def test_lines_chunker_is_the_reference_pipelines(tmp_path: Path):
    from ragmeter.rubric._pipeline import read_kb

    text = "a first line that is long enough\n\nsame line again, long enough\n" \
           "same line again, long enough\nshort\n"
    path = tmp_path / "kb.md"
    path.write_text(text, encoding="utf-8")
    assert chunk_text(text, "lines", min_chars=1) == read_kb(path)
    assert chunk_text(text, "lines", min_chars=10) == read_kb(path)[:2]


def test_ragaliq_kb_sections_have_the_originals_sizes():
    kb = shared("ragaliq", "data", "orientation_en.md").read_text(encoding="utf-8")
    chunks = chunk_text(kb)
    assert 40 <= len(chunks) <= 80 and max(len(c) for c in chunks) <= 4000


def test_sampling_is_seeded_and_in_document_order():
    from ragmeter.rubric._chunking import Chunk

    chunks = [Chunk(f"kb#{i}", "kb", i, f"text {i}") for i in range(20)]
    a = sample_chunks(chunks, 5, seed=1)
    assert a == sample_chunks(chunks, 5, seed=1) and a != sample_chunks(chunks, 5, seed=2)
    assert [c.index for c in a] == sorted(c.index for c in a)
    assert sample_chunks(chunks, None) == chunks and sample_chunks(chunks, 50) == chunks


def test_duplicate_key_and_degenerate_alarm():
    assert normalize_question("When does the Library close?") == \
        normalize_question("when does the library close")
    assert normalize_question("Wann?") != normalize_question("Wo?")
    alarm = degenerate_critic([5] * 19 + [4], "critic-x", "relevance")
    assert alarm is not None and (alarm["verdict"], alarm["share"], alarm["n"]) == (5, 0.95, 20)
    assert "relevance critique" in alarm["message"]
    assert degenerate_critic([5] * 18 + [4, 3]) is None
    assert degenerate_critic([5] * 4) is None  # too few to tell


def test_prompt_files(tmp_path: Path):
    gen = tmp_path / "gen.txt"
    gen.write_text("Context: {context}\nOutput:::\nFactoid question: ...\nAnswer: ...",
                   encoding="utf-8")
    bad = tmp_path / "bad.txt"
    bad.write_text("Question: {question} and {nonsense}", encoding="utf-8")
    rel = tmp_path / "rel.txt"  # a relevance critique must see the question (issue 29.11)
    rel.write_text("How useful is this question for {audience}?\n{question}", encoding="utf-8")
    p = BuildPrompts.default().with_files(gen, {"relevance": rel})
    assert p.version.startswith("ragmeter-rubric-build-2|gen=file:gen.txt:")
    assert p.generate.render(context="C", audience="x")[-1].content.startswith("Context: C")
    with pytest.raises(InputError, match="nonsense"):
        BuildPrompts.default().with_files(None, {"groundedness": bad})


@pytest.mark.parametrize("out, lang, expected", [
    ("d/questions_en.json", "de", "d/questions_de.json"),
    ("d/questions.jsonl", "fr", "d/questions_fr.jsonl"),
    ("orientation_en.md", "zh", "orientation_zh.md"),
])
def test_language_paths(out, lang, expected):
    assert language_path(out, lang, "en") == Path(expected)
