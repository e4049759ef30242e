"""Small pure pieces: per-item agreement, the spend block, group names, repeat requests."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ragmeter._verb._groups import FieldLookup, group_items
from ragmeter.backends._types import Request, Response, Usage
from ragmeter.judges._repeats import repeat_requests
from ragmeter.judges._spend import add_usage, money, spend, usage_of
from ragmeter.stats._stability import item_agreement


@pytest.mark.parametrize(("verdicts", "expected"), [
    ([1, 1, 1], 1.0), ([1, 0, 1], 2 / 3), ([1, None, 0], 0.5), ([None, 1], None), ([], None),
    (["a", "b", "c", "a"], 0.5)])
def test_item_agreement(verdicts, expected) -> None:
    assert item_agreement(verdicts) == (pytest.approx(expected) if expected else None)


def _outcome(p: int, c: int, *, cached: bool = False, ok: bool = True) -> SimpleNamespace:
    return SimpleNamespace(ok=ok, cached=cached,
                           response=Response(text="x", usage=Usage(p, c)) if ok else None)


def test_spend_counts_own_cached_and_failed_calls() -> None:
    u = usage_of([_outcome(100, 10), _outcome(50, 5, cached=True), _outcome(0, 0, ok=False)])
    assert u == {"calls": 1, "cached_calls": 1, "failed_calls": 1, "prompt_tokens": 100,
                 "completion_tokens": 10, "cached_prompt_tokens": 50,
                 "cached_completion_tokens": 5}
    block = spend(u, 2.0, 8.0)
    assert block["cost_usd"] == pytest.approx((100 * 2 + 10 * 8) / 1e6)
    assert block["cached"]["cost_usd"] == pytest.approx((50 * 2 + 5 * 8) / 1e6)
    assert spend(u)["cost_usd"] is None and money(1, 1, None, None) is None
    assert add_usage([u, None, u])["calls"] == 2


def test_repeat_requests_keep_repeat_zero_and_key_the_rest() -> None:
    base = [Request.chat("a", [{"role": "user", "content": "q"}], params={"temperature": 0}),
            Request.chat("b", [{"role": "user", "content": "q"}], choices=("Yes", "No"))]
    out = repeat_requests(base, 3)
    assert out[:2] == base and [r.id for r in out[2:]] == ["a#1", "b#1", "a#2", "b#2"]
    ident = {"backend": "openai", "model": "m"}
    assert len({r.cache_key(ident) for r in out}) == 6
    assert out[2].params["seed"] == 1 and "seed" not in out[3].params


def test_field_lookup_empty_group_and_unknown_field() -> None:
    items = [{"id": 1, "lang": "en"}, {"id": 2}, {"id": 3, "lang": "zh"}]
    assert list(group_items(items, FieldLookup("lang", "x"))) == ["", "en", "zh"]
    from ragmeter.errors import InputError

    with pytest.raises(InputError, match="no item has a field 'system'"):
        group_items(items, FieldLookup("system", "x"))


def test_rgb_detector_repeats_make_no_call(tmp_path) -> None:
    import ragmeter
    from ragmeter.io._samples import sample_path

    preds = [{"id": i, "prediction": "insufficient information" if i % 2 else "Paris"}
             for i in range(4)]
    backend = ragmeter.backends.openai("m", base_url="http://127.0.0.1:9/v1")  # unreachable
    res = ragmeter.rgb.judge(preds, data=str(sample_path("rgb_en.jsonl")), repeats=3,
                             judge_method="detector", backend=backend,
                             store=str(tmp_path / "s.sqlite"))
    assert res.summary["stability"]["deterministic"] is True
    assert res.summary["spend"]["calls"] == 0
