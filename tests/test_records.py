"""The plain ``__slots__`` records (``ragmeter._util._record``) behave as the frozen dataclasses
they replaced (issue 26.5): the same repr, equality, hash, error on assignment, pickling.  Each
test builds the record and a dataclass with main's definition of the same fields (written out
here as they stood before) and compares them."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from ragmeter._util._record import as_dict, replace
from ragmeter.backends._registry import BackendRecipe, BackendSpec
from ragmeter.backends._types import (
    Capabilities,
    Message,
    Readiness,
    Request,
    Response,
    TokenCounter,
    Usage,
)
from ragmeter.backends._values import ModelBackend
from ragmeter.errors import ConfigError
from ragmeter.io._formats import Row
from ragmeter.io._read import FieldMap
from ragmeter.runner._estimate import DryRunEstimate
from ragmeter.runner._store import StoreStats
from ragmeter.runner._types import Outcome, RunnerConfig, RunStats


# main's dataclasses, as they stood (the records' field order, defaults and compare flags)
@dataclass(frozen=True)
class Message_:
    role: str
    content: str


@dataclass(frozen=True)
class Request_:
    id: str
    messages: tuple[Any, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    choices: tuple[str, ...] | None = None
    repeat: int = 0


@dataclass(frozen=True)
class Usage_:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class Response_:
    text: str
    usage: Any = field(default_factory=Usage)
    latency_ms: float = 0.0
    choice_probs: dict[str, float] | None = None
    finish_reason: str | None = None
    choice_method: str | None = None


@dataclass(frozen=True)
class Capabilities_:
    in_process: bool = False
    choice_scoring: bool | None = False
    batching: bool = False
    remote: bool = False


@dataclass(frozen=True)
class Readiness_:
    ready: bool
    note: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TokenCounter_:
    method: str
    exact: bool
    _count: Callable[[str], int]
    _count_messages: Callable[..., int]


@dataclass(frozen=True)
class RunnerConfig_:
    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    max_retries: int = 5
    timeout_s: float = 120.0
    replay: bool = False
    progress: bool = True
    description: str = "calls"
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 300.0
    record_run: bool = True
    lease_s: float = 30.0
    claim_poll_s: float = 0.2
    price_prompt_per_mtok: float | None = None
    price_completion_per_mtok: float | None = None
    engine: Any = None
    on_progress: Any = field(default=None, compare=False)


@dataclass(frozen=True)
class Outcome_:
    request: Any
    status: str
    response: Any = None
    reason: str | None = None
    detail: str | None = None
    cached: bool = False
    attempts: int = 0
    key: str | None = None


@dataclass
class RunStats_:
    total: int = 0
    cached: int = 0
    calls: int = 0
    ok: int = 0
    unscored: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    wall_s: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class BackendSpec_:
    name: str
    target: str
    description: str
    mirror: Any = None
    plugin: str | None = None


@dataclass(frozen=True)
class BackendRecipe_:
    name: str
    target: str
    kwargs: tuple[tuple[str, Any], ...] = ()
    remote: bool = False


@dataclass(frozen=True)
class StoreStats_:
    path: str
    calls: int
    runs: int
    item_results: int
    prompt_tokens: int
    completion_tokens: int
    size_bytes: int
    by_model: dict[str, int]
    schema_version: int
    runs_by_status: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class DryRunEstimate_:
    requests: int
    cached: int
    calls: int
    prompt_tokens: int
    completion_tokens_max: int
    token_method: str = "chars/4"
    cost_usd_max: float | None = None


@dataclass(frozen=True)
class Row_:
    data: dict[str, Any]
    number: int
    unit: str
    path: str


@dataclass(frozen=True)
class FieldMap_:
    mapping: Mapping[str, str] = field(default_factory=dict)
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


MSG = Message("user", "hi")
REQ = Request("q1", (MSG,), {"temperature": 0}, ("A", "B"), 2)
# (record, the same fields as main's dataclass, another record that differs in one field)
CASES: list[tuple[Any, Any, Any]] = [
    (MSG, Message_("user", "hi"), Message("user", "ho")),
    (REQ, Request_("q1", (MSG,), {"temperature": 0}, ("A", "B"), 2), Request("q2", (MSG,))),
    (Request("q", (MSG,)), Request_("q", (MSG,)), Request("q", (MSG,), repeat=1)),
    (Usage(3, 4), Usage_(3, 4), Usage(3)),
    (Response("t", Usage(1, 2), 5.0, {"A": 0.5}, "stop", "logprobs"),
     Response_("t", Usage(1, 2), 5.0, {"A": 0.5}, "stop", "logprobs"), Response("t")),
    (Response("t"), Response_("t"), Response("u")),
    (Capabilities(choice_scoring=None, remote=True),
     Capabilities_(choice_scoring=None, remote=True), Capabilities()),
    (Readiness(True, "ok", {"a": 1}), Readiness_(True, "ok", {"a": 1}), Readiness(False)),
    (TokenCounter("chars/4", False, len, len), TokenCounter_("chars/4", False, len, len),
     TokenCounter("chars/4", True, len, len)),
    (RunnerConfig(concurrency=3, rpm=60.0, description="judge calls"),
     RunnerConfig_(concurrency=3, rpm=60.0, description="judge calls"), RunnerConfig()),
    (Outcome(REQ, "unscored", reason="timeout", attempts=2, key="v1:x"),
     Outcome_(REQ, "unscored", reason="timeout", attempts=2, key="v1:x"), Outcome(REQ, "ok")),
    (RunStats(total=2, reasons={"timeout": 1}), RunStats_(total=2, reasons={"timeout": 1}),
     RunStats(total=3)),
    (BackendSpec("x", "m:C", "d", Capabilities(remote=True)),
     BackendSpec_("x", "m:C", "d", Capabilities(remote=True)), BackendSpec("x", "m:C", "e")),
    (BackendRecipe("x", "m:C", (("model", "y"),), True),
     BackendRecipe_("x", "m:C", (("model", "y"),), True), BackendRecipe("x", "m:C")),
    (StoreStats("s.db", 1, 2, 3, 4, 5, 6, {"m": 1}, 7),
     StoreStats_("s.db", 1, 2, 3, 4, 5, 6, {"m": 1}, 7),
     StoreStats("s.db", 1, 2, 3, 4, 5, 6, {"m": 1}, 7, {"finished": 1})),
    (Row({"id": "q1"}, 3, "line", "r.jsonl"), Row_({"id": "q1"}, 3, "line", "r.jsonl"),
     Row({"id": "q1"}, 4, "line", "r.jsonl")),
    (FieldMap({"a": "b"}), FieldMap_({"a": "b"}), FieldMap()),
    (DryRunEstimate(3, 1, 2, 40, 50, cost_usd_max=0.5),
     DryRunEstimate_(3, 1, 2, 40, 50, cost_usd_max=0.5), DryRunEstimate(3, 1, 2, 40, 51)),
]
IDS = [type(case[0]).__name__ for case in CASES]


@pytest.mark.parametrize(("rec", "old", "other"), CASES, ids=IDS)
def test_repr_and_equality_are_the_dataclass_ones(rec: Any, old: Any, other: Any) -> None:
    assert repr(rec) == repr(old).replace(f"{type(old).__qualname__}(",
                                          f"{type(rec).__qualname__}(", 1)
    assert as_dict(rec) == {f.name: getattr(old, f.name) for f in dataclasses.fields(old)}
    assert rec.__match_args__ == old.__match_args__
    twin = copy.copy(rec)
    assert twin == rec and twin is not rec and not (twin != rec)
    assert rec != other and other != rec
    assert (rec == old) is False  # another class never compares equal (as dataclasses)
    assert rec.__eq__(old) is NotImplemented


@pytest.mark.parametrize(("rec", "old", "other"), CASES, ids=IDS)
def test_hash_and_assignment_are_the_dataclass_ones(rec: Any, old: Any, other: Any) -> None:
    frozen = old.__dataclass_params__.frozen
    try:
        expected: Any = hash(old)
    except TypeError as err:  # a mutable dataclass, or a dict among the fields
        expected = str(err)
        with pytest.raises(TypeError, match="unhashable"):
            hash(rec)
    else:
        assert hash(rec) == expected  # both hash the tuple of compared fields
    name = next(iter(as_dict(rec)))
    if frozen:
        with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field "
                                                                  f"'{name}'"):
            setattr(rec, name, 1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(rec, name)
    else:
        changed = copy.copy(rec)
        setattr(changed, name, 99)
        assert getattr(changed, name) == 99 and changed != rec
    with pytest.raises(AttributeError):
        rec.not_a_field = 1  # slots: no other attribute


@pytest.mark.parametrize(("rec", "old", "other"), CASES, ids=IDS)
def test_pickle_and_deepcopy_keep_every_field(rec: Any, old: Any, other: Any) -> None:
    assert pickle.loads(pickle.dumps(rec)) == rec
    assert copy.deepcopy(rec) == rec


def test_defaults_are_new_objects_and_on_progress_is_not_compared() -> None:
    a, b = Request("q", (MSG,)), Request("q", (MSG,))
    assert a.params == {} and a.params is not b.params
    assert Readiness(True).details is not Readiness(True).details
    assert RunStats().reasons is not RunStats().reasons
    assert Response("t").usage == Usage()
    # len, not print: once Ray's tqdm_ray is used in this process, builtins.print is its safe_print
    assert RunnerConfig(on_progress=len) == RunnerConfig()
    assert hash(RunnerConfig(on_progress=len)) == hash(RunnerConfig())
    assert "on_progress=<built-in function len>" in repr(RunnerConfig(on_progress=len))
    with pytest.raises(ConfigError, match="temperature= must be a finite number"):  # Request's own check is kept
        Request("q", (MSG,), {"temperature": float("nan")})


def test_replace_and_as_dict() -> None:
    again = replace(REQ, id="q9", repeat=0)
    assert again == Request("q9", (MSG,), {"temperature": 0}, ("A", "B"), 0)
    assert REQ.id == "q1"  # the original is unchanged
    with pytest.raises(TypeError, match="Request has no field 'nope'"):
        replace(REQ, nope=1)
    stats = RunStats(reasons={"timeout": 1})
    d = stats.to_dict()
    assert d == dataclasses.asdict(RunStats_(reasons={"timeout": 1}))
    d["reasons"]["timeout"] = 5  # a copy, as dataclasses.asdict's
    assert stats.reasons == {"timeout": 1}
    with pytest.raises(ConfigError, match="--concurrency"):  # RunnerConfig's checks run again
        replace(RunnerConfig(), concurrency=0)


def test_model_backend_is_compared_by_identity_and_hides_its_key() -> None:
    @dataclass(frozen=True, eq=False)
    class ModelBackend_:
        name: str = "local"
        model: str | None = None
        base_url: str | None = None
        api_key: str | None = field(default=None, repr=False)
        concurrency: int = 8
        rpm: float | None = None
        tpm: float | None = None
        timeout: float = 120.0
        max_retries: int = 5
        price_prompt: float | None = None
        price_completion: float | None = None
        batch_size: int = 1
        engine: str = "local"
        ray_address: str | None = None
        ray_workers: int = 2
        ray_cpus_per_worker: int = 1
        ray_num_gpus: float = 0.0
        ray_batch_size: int = 16
        _lock: Any = field(default=None, repr=False, compare=False)
        _instance: Any = field(default=None, repr=False, compare=False)

    opts = {"name": "openai", "model": "m", "api_key": "sk-secret", "concurrency": 4,
            "rpm": 60.0}
    a, b = ModelBackend(**opts), ModelBackend(**opts)  # type: ignore[arg-type]
    old = repr(ModelBackend_(**opts))  # type: ignore[arg-type]
    assert repr(a) == "ModelBackend(" + old.split("(", 1)[1]
    assert "sk-secret" not in repr(a)
    assert a != b and a == a and hash(a) == object.__hash__(a)  # identity, as eq=False
    assert a._lock is not b._lock and a._instance == [] and a._instance is not b._instance
    assert ModelBackend(concurrency=8.0).concurrency == 8  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.model = "other"  # type: ignore[misc]
    again = replace(a, model="n")  # shares the instance cache, as dataclasses.replace did
    assert again.model == "n" and again.api_key == "sk-secret" and again._instance is a._instance
