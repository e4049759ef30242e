"""Document selection against ../shared/data/rgb, compared with a test-side transcription of the
selection rules of issue 4 (= chen700564/RGB @ 65ec39e evalue.py ``processdata``), written here
independently in the original's style: module-level ``random`` after ``random.seed(2333)``,
in-place shuffles on a fresh copy of the instance, as a new evalue.py process would see it.
"""

from __future__ import annotations

import copy
import json
import math
import random

import pytest

from ragmeter.errors import ConfigError
from ragmeter.rgb._build import BuildConfig, build_rows
from ragmeter.rgb._data import load_dataset
from ragmeter.rgb._prompts import load_prompts
from ragmeter.rgb._selection import select_docs
from tests.conftest import shared


def reference_docs(instance: dict, kind: str, noise_rate: float, passage_num: int,
                   correct_rate: float) -> list[str]:
    """The rules of issue 4, transcribed step by step."""
    inst = copy.deepcopy(instance)
    random.seed(2333)
    if passage_num == 0:
        return []
    neg_num = math.ceil(passage_num * noise_rate)
    pos_num = passage_num - neg_num
    if kind == "int":
        for group in inst["positive"]:
            random.shuffle(group)
        docs = [group[0] for group in inst["positive"]]
        depth = 1
        while len(docs) < pos_num and depth < max(len(g) for g in inst["positive"]):
            for group in inst["positive"]:
                if len(group) > depth and len(docs) < pos_num:
                    docs.append(group[depth])
            depth += 1
        missing = passage_num - len(docs)
        if missing > 0:
            docs += inst["negative"][:missing]
    elif kind == "fact":
        correct_num = math.ceil(passage_num * correct_rate)
        pos_num = passage_num - neg_num - correct_num
        idx = list(range(len(inst["positive"])))
        chosen = random.sample(idx, min(len(idx), pos_num))
        docs = [inst["positive_wrong"][i] for i in chosen]
        rest = [i for i in idx if i not in chosen]
        if correct_num > 0 and rest:
            docs += [inst["positive"][i] for i in random.sample(rest, min(len(rest), correct_num))]
        if neg_num > 0:
            docs += inst["negative"][:neg_num]
    else:
        if noise_rate == 1:
            neg_num, pos_num = passage_num, 0
        elif neg_num > len(inst["negative"]):
            neg_num = len(inst["negative"])
            pos_num = passage_num - neg_num
        elif pos_num > len(inst["positive"]):
            pos_num = len(inst["positive"])
            neg_num = passage_num - pos_num
        docs = inst["positive"][:pos_num] + inst["negative"][:neg_num]
    random.shuffle(docs)
    return docs


def _raw(name: str) -> list[dict]:
    with shared("rgb", name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


NOISE = (0.0, 0.2, 0.4, 0.6, 0.8)
CASES = (
    [("zh_refine.json", "default", n, 0.0) for n in NOISE + (1.0,)]
    + [("zh_int.json", "int", n, 0.0) for n in NOISE]
    + [(f, "fact", n, c) for f in ("en_fact.json", "zh_fact.json") for n in NOISE
       for c in (0.0, 0.2)]
)


@pytest.mark.parametrize(("name", "kind", "noise_rate", "correct_rate"), CASES)
def test_docs_equal_reference(name: str, kind: str, noise_rate: float, correct_rate: float):
    raw = _raw(name)
    dataset = load_dataset(shared("rgb", name))
    assert dataset.kind == kind
    assert len(dataset.instances) == len(raw)
    for inst, row in zip(dataset.instances, raw, strict=True):
        expected = reference_docs(row, kind, noise_rate, 5, correct_rate)
        assert select_docs(inst, kind, noise_rate, 5, correct_rate) == expected, inst.id


@pytest.mark.parametrize(("noise_rate", "n_neg"), [(0.0, 0), (0.2, 1), (0.4, 2), (0.6, 3),
                                                   (0.8, 4), (1.0, 5)])
def test_noise_counts_default(noise_rate: float, n_neg: int):
    # neg_num = ceil(5 * noise_rate); zh_refine row 0 has enough positives and negatives.
    raw = _raw("zh_refine.json")[0]
    docs = select_docs(load_dataset(shared("rgb", "zh_refine.json")).instances[0], "default",
                       noise_rate, 5)
    assert len(docs) == 5
    assert sum(d in raw["negative"] for d in docs) == n_neg
    assert sum(d in raw["positive"] for d in docs) == 5 - n_neg


def test_repeated_selection_does_not_mutate():
    inst = load_dataset(shared("rgb", "zh_int.json")).instances[3]
    first = select_docs(inst, "int", 0.2, 5)
    assert select_docs(inst, "int", 0.2, 5) == first
    assert select_docs(inst, "int", 0.0, 5) == select_docs(inst, "int", 0.0, 5)


def test_passage_num_zero_gives_no_docs_and_no_system_prompt():
    dataset = load_dataset(shared("rgb", "en_fact.json"))
    rows = list(build_rows(dataset, load_prompts(), BuildConfig(noise_rate=0.0, passage_num=0)))
    assert all(r["docs"] == [] for r in rows)
    assert all([m["role"] for m in r["messages"]] == ["user"] for r in rows)


def test_build_messages_with_rgb_instruction_yaml():
    prompts = load_prompts(shared("rgb", "config", "instruction.yaml"))
    dataset = load_dataset(shared("rgb", "zh_fact.json"))
    row = next(build_rows(dataset, prompts, BuildConfig(noise_rate=0.2, correct_rate=0.2)))
    system, instruction = prompts.by_lang["zh"]
    assert row["messages"][0] == {"role": "system", "content": system}
    assert row["messages"][1]["content"] == instruction.format(
        QUERY=row["query"], DOCS="\n".join(row["docs"]))
    assert row["messages"][1]["content"].startswith("文档：\n")
    assert prompts.version.startswith("file:instruction.yaml:")


def test_fact_rates_that_leave_negative_counterfactuals_are_refused():
    inst = load_dataset(shared("rgb", "en_fact.json")).instances[0]
    with pytest.raises(ConfigError, match="noise_rate \\+ correct_rate"):
        select_docs(inst, "fact", 1.0, 5, 0.2)


@pytest.mark.parametrize(("stem", "kind", "lang"), [
    ("en", None, "en"), ("zh_refine", None, "zh"), ("en_int", "int", "en"),
    ("zh_fact", "fact", "zh"), ("my_zh_set", None, "zh"), ("data", None, "en"),
])
def test_kind_and_lang_from_name(stem: str, kind: str | None, lang: str):
    from ragmeter.rgb._data import kind_from_name, lang_from_name

    assert kind_from_name(stem) == kind
    assert lang_from_name(stem) == lang


# ---------------------------------------------------------------- every branch, synthetic data

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ragmeter.rgb._data import RgbInstance  # noqa: E402


def _inst(row: dict) -> RgbInstance:
    pos = row["positive"]
    return RgbInstance(id=0, query="q", answer="a",
                       positive=tuple(tuple(g) if isinstance(g, list) else g for g in pos),
                       negative=tuple(row["negative"]),
                       positive_wrong=tuple(row["positive_wrong"]) if "positive_wrong" in row
                       else None, place="line 1")


@settings(max_examples=300, deadline=None)
@given(n_pos=st.integers(0, 7), n_neg=st.integers(0, 7), passage_num=st.integers(0, 8),
       noise=st.sampled_from([0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 0.33]))
def test_default_matches_reference_with_clamping(n_pos, n_neg, passage_num, noise):
    row = {"positive": [f"p{i}" for i in range(n_pos)], "negative": [f"n{i}" for i in range(n_neg)]}
    assert select_docs(_inst(row), "default", noise, passage_num) == reference_docs(
        row, "default", noise, passage_num, 0.0)


@settings(max_examples=300, deadline=None)
@given(groups=st.lists(st.integers(1, 5), min_size=1, max_size=5), n_neg=st.integers(0, 6),
       passage_num=st.integers(1, 8), noise=st.sampled_from([0.0, 0.2, 0.4, 0.6, 0.8]))
def test_integration_matches_reference(groups, n_neg, passage_num, noise):
    row = {"positive": [[f"g{g}d{i}" for i in range(size)] for g, size in enumerate(groups)],
           "negative": [f"n{i}" for i in range(n_neg)]}
    assert select_docs(_inst(row), "int", noise, passage_num) == reference_docs(
        row, "int", noise, passage_num, 0.0)


@settings(max_examples=300, deadline=None)
@given(n_pos=st.integers(1, 6), n_neg=st.integers(0, 6), passage_num=st.integers(1, 8),
       noise=st.sampled_from([0.0, 0.2, 0.4, 0.6, 0.8]), correct=st.sampled_from([0.0, 0.2]))
def test_counterfactual_matches_reference(n_pos, n_neg, passage_num, noise, correct):
    import math as _m

    if passage_num - _m.ceil(passage_num * noise) - _m.ceil(passage_num * correct) < 0:
        return  # refused (ConfigError), see test_fact_rates_that_leave_...
    row = {"positive": [f"p{i}" for i in range(n_pos)],
           "positive_wrong": [f"w{i}" for i in range(n_pos)],
           "negative": [f"n{i}" for i in range(n_neg)]}
    assert select_docs(_inst(row), "fact", noise, passage_num, correct) == reference_docs(
        row, "fact", noise, passage_num, correct)


@pytest.mark.parametrize(("n_pos", "n_neg", "noise", "expect_pos", "expect_neg"), [
    (5, 1, 0.4, 4, 1),   # too few negatives: all negatives, fill with positives
    (1, 9, 0.2, 1, 4),   # too few positives: all positives, fill with negatives
    (0, 2, 1.0, 0, 2),   # noise 1: negatives only (fewer than passage_num available)
    (2, 2, 0.4, 2, 2),   # both short: the first clamp only, as evalue.py (4 docs)
])
def test_default_clamping_table(n_pos, n_neg, noise, expect_pos, expect_neg):
    row = {"positive": [f"p{i}" for i in range(n_pos)], "negative": [f"n{i}" for i in range(n_neg)]}
    docs = select_docs(_inst(row), "default", noise, 5)
    assert sum(d.startswith("p") for d in docs) == expect_pos
    assert sum(d.startswith("n") for d in docs) == expect_neg
