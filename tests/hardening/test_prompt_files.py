"""``rubric build`` prompt files are checked before any call (issue 29.11), by the one check
every ``--prompt-file`` goes through (``ragmeter.prompts.check_template``): a generation prompt
without ``{context}``, or a critique without the fields its criterion rates on, would produce
calls whose answers mean nothing, and used to be accepted.  Each is now exit 2 with one line
naming the file and the missing field, and nothing is paid."""

from __future__ import annotations

from pathlib import Path

import pytest

KB = "# Rivers\n\n" + "The river floods most springs and the town moved uphill in 1921. " * 8


def _kb(tmp: Path) -> Path:
    path = tmp / "kb.md"
    path.write_text(KB, encoding="utf-8")
    return path


BAD = [
    # (option, criterion or None, template, what the line must say)
    ("generation", None, "Write a question for {audience}.", "has no {context} field"),
    ("critique", "groundedness", "Rate how well this is answered: {question}",
     "has no {context} field"),
    ("critique", "groundedness", "Rate this context: {context}", "has no {question} field"),
    ("critique", "relevance", "Rate this for {audience}.", "has no {question} field"),
    ("critique", "standalone", "Rate this: {context}", "has no {question} field"),
    ("critique", "relevance", "Rate {question} from {source}.", "unknown field {source}"),
    ("generation", None, "Context: {context} {0}", "unknown field {0}"),
    ("generation", None, "Context: {context", "is not a valid str.format template"),
]


@pytest.mark.parametrize(("option", "criterion", "template", "message"), BAD,
                         ids=[f"{o}-{c}-{i}" for i, (o, c, _, _) in enumerate(BAD)])
def test_a_prompt_file_without_its_fields_is_refused_before_any_call(
        option, criterion, template, message, tmp_path, run_cli, scripted_server):
    server = scripted_server()
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(template, encoding="utf-8")
    flag = (["--generation-prompt-file", prompt] if option == "generation"
            else ["--critique-prompt-file", f"{criterion}={prompt}"])
    out = tmp_path / "questions.json"
    code, _, err = run_cli("rubric", "build", _kb(tmp_path), "--out", out, *flag,
                           "--backend", "openai", "--model", "m", "--base-url", server.url,
                           "--store", tmp_path / "s.sqlite")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert str(prompt) in lines[0] and message in lines[0], lines[0]
    assert server.stats()["calls"] == 0 and not out.exists()


def test_a_complete_prompt_file_is_used(tmp_path):
    """The same check accepts a file with the fields (the audience stays optional)."""
    import ragmeter

    gen = tmp_path / "gen.txt"
    gen.write_text("From this text:\n{context}\nwrite one question and its answer.",
                   encoding="utf-8")
    ground = tmp_path / "ground.txt"
    ground.write_text("Context: {context}\nQuestion: {question}\nRate 1-5.", encoding="utf-8")
    result = ragmeter.rubric.build(_kb(tmp_path), generation_prompt_file=gen,
                                   critique_prompt_files={"groundedness": ground},
                                   dry_run=True)
    assert result.summary["calls"] > 0
