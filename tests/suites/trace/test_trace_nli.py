"""``trace label/run --strategy nli`` (issue 27.6) end to end on a tiny NLI model the test
builds itself: a randomly initialised one-layer BERT sequence classifier and a word-piece
tokenizer over a 40-word vocabulary, saved to tmp (no download).  The real loading path
(``from_pretrained(local_files_only=True)``), the batched scoring and the label rows are
checked against the same model called directly with transformers."""

from __future__ import annotations

import json

import pytest

import ragmeter
from ragmeter.errors import ConfigError
from ragmeter.io._samples import sample_path

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SAMPLE = sample_path("trace_labelled.jsonl")  # 3 annotated rows
WORDS = ("the a is was of in to and it on for with not no yes what when where who how "
         "device manual battery power screen light button press hold seconds year city "
         "river paris london").split()
LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}


def build_model(folder, *, id2label=None, bias=None, seed=0):
    """Save a tiny random BERT NLI classifier and its tokenizer to ``folder``."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    id2label = id2label or LABELS
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32,
                        max_position_embeddings=128, num_labels=len(id2label),
                        id2label=id2label, label2id={v: k for k, v in id2label.items()})
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config).eval()
    if bias is not None:
        with torch.no_grad():
            model.classifier.bias.copy_(torch.tensor(bias, dtype=torch.float32))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_model(tmp_path_factory.mktemp("nli") / "tiny-nli")


def direct_support(folder, pairs):
    """p(entailment) of each pair, computed with transformers directly (one pair at a time,
    no padding): the independent reference for the batched path."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(folder),
                                                               local_files_only=True).eval()
    out = []
    for premise, hypothesis in pairs:
        enc = tok(premise, hypothesis, truncation=True, max_length=512, return_tensors="pt")
        with torch.no_grad():
            out.append(float(torch.softmax(model(**enc).logits, -1)[0, 0]))
    return out


def test_label_nli_matches_the_model_called_directly(tiny):
    from ragmeter.trace._data import read_sources
    from ragmeter.trace._label import LabelConfig, prepare
    from ragmeter.trace._nli import nli_pairs

    result = ragmeter.trace.label(SAMPLE, strategy="nli", nli_model=str(tiny),
                                  nli_batch_size=2)
    rows = result.items
    assert result.summary["strategy"] == "nli" and len(rows) == 3
    assert all(r["status"] == "ok" for r in rows)
    config = LabelConfig(strategy="nli", nli_model=str(tiny))
    sources = read_sources(SAMPLE)
    for row, source in zip(rows, sources, strict=True):
        pairs = nli_pairs(prepare(source, config), config)
        want = direct_support(tiny, pairs)
        got = [row["support_probabilities"][k] for k, _ in row["response_sentences"]]
        assert got == pytest.approx(want, abs=1e-4)  # batched + padded == one by one
        assert row["adherence_probability"] == min(got)
        unsupported = [k for k, p in row["support_probabilities"].items() if p < 0.5]
        assert row["unsupported_response_sentence_keys"] == unsupported
        assert row["adherence_score"] == (not unsupported)
        assert row["all_relevant_sentence_keys"] is None  # NLI judges support only
        assert row["judge"].startswith("nli:tiny-nli@")
    card = result.judges[0]
    assert card["validated"] is False and card["judge"].startswith("nli:tiny-nli@")
    assert "nli" in result.summary["signature"] and result.summary["device"] == "cpu"


@pytest.mark.parametrize(("bias", "adherent"), [
    ([8.0, 0.0, 0.0], True),    # entailment dominates every pair: every sentence supported
    ([-8.0, 0.0, 8.0], False),  # contradiction dominates: every row has an unsupported one
])
def test_label_nli_follows_the_model(tmp_path, bias, adherent):
    folder = build_model(tmp_path / "biased", bias=bias)
    rows = ragmeter.trace.label(SAMPLE, strategy="nli", nli_model=str(folder)).items
    assert [r["adherence_score"] for r in rows] == [adherent] * 3


def test_run_nli_validates_against_annotations(tiny):
    result = ragmeter.trace.run(SAMPLE, nli_model=str(tiny))  # auto picks nli
    assert result.summary["label"]["strategy"] == "nli"
    (name, measured), = result.summary["judges"].items()  # measured against annotations
    assert name.startswith("nli:tiny-nli@") and name.endswith("(nli)")
    assert set(measured) == {"hallucination_auroc"}  # support only: no relevance RMSE
    assert 0.0 <= measured["hallucination_auroc"]["value"] <= 1.0
    assert [h.metric for h in result.headline] == ["hallucination_auroc"]
    # unvalidated when it labels; after `trace run` its card carries what the run measured
    card = result.judges[0]
    assert card["validated"] is True
    assert card["validation"]["value"] == measured["hallucination_auroc"]["value"]
    assert card["validation"]["data"] == "this trace run's 3 annotated rows"


def test_cli_label_nli(tiny, tmp_path, run_cli):
    out = tmp_path / "labels.jsonl"
    code, _, err = run_cli("trace", "label", str(SAMPLE), "--strategy", "nli",
                           "--nli-model", str(tiny), "--out", str(out))
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3 and rows[0]["strategy"] == "nli"
    code, stdout, _ = run_cli("trace", "label", str(SAMPLE), "--strategy", "nli",
                              "--nli-model", str(tiny), "--dry-run", "--out", str(out))
    assert code == 0 and "pairs" in stdout


def test_nli_errors(tmp_path, monkeypatch, run_cli):
    with pytest.raises(ConfigError, match="needs --nli-model"):
        ragmeter.trace.label(SAMPLE, strategy="nli")
    with pytest.raises(ConfigError, match="applies to --strategy nli only"):
        ragmeter.trace.label(SAMPLE, strategy="detector", nli_model=str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(ConfigError, match="never downloads"):
        ragmeter.trace.label(SAMPLE, strategy="nli", nli_model="someone/not-cached-nli")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="without config.json"):
        ragmeter.trace.label(SAMPLE, strategy="nli", nli_model=str(tmp_path / "empty"))
    odd = build_model(tmp_path / "odd", id2label={0: "LABEL_0", 1: "LABEL_1"})
    with pytest.raises(ConfigError, match="name no supported class"):
        ragmeter.trace.label(SAMPLE, strategy="nli", nli_model=str(odd))
    code, _, err = run_cli("trace", "label", str(SAMPLE), "--strategy", "nli",
                           "--out", str(tmp_path / "x.jsonl"))
    assert code == 2 and "Traceback" not in err


def test_single_output_model_is_read_as_a_logit(tmp_path):
    from ragmeter.backends._nli import NliModel

    folder = build_model(tmp_path / "hhem-like", id2label={0: "score"}, bias=[3.0])
    model = NliModel(str(folder), batch_size=4)
    probs = model.support([("the battery", "the battery is power"), ("a", "no")])
    assert len(probs) == 2 and all(0.0 < p < 1.0 for p in probs)


def test_web_form_launches_the_nli_strategy(tiny, tmp_path):
    """The web app's trace-run form: --strategy nli with --nli-model runs the same verb."""
    pytest.importorskip("starlette")
    from ragmeter.view.forms import validate
    from ragmeter.view.verbs import SPECS

    launch = validate(SPECS["trace-run"], {"data": "sample:trace_labelled.jsonl",
                                          "strategy": "nli", "nli_model": str(tiny)}, [])
    assert launch.command()[-4:] == ["--strategy", "nli", "--nli-model", str(tiny)]
    result = launch.run(store_path=str(tmp_path / "s.sqlite"))
    assert result.summary["label"]["strategy"] == "nli"
    empty = validate(SPECS["trace-run"], {"data": "sample:trace_labelled.jsonl"}, [])
    assert empty.get("nli_model") is None  # an empty field is no model
