"""Third-party backends through the ``ragmeter.backends`` entry-point group, end to end.

The plugin (tests/backends/plugin_backend.py) is installed as a real distribution: a
``*.dist-info`` folder with ``METADATA`` and ``entry_points.txt`` in a folder put on
``sys.path``, found by :mod:`importlib.metadata` exactly as a ``pip install``ed one would be.
Nothing in ragmeter names it: the verbs choose choice scoring because its class declares it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragmeter
from ragmeter.backends import ModelBackend
from ragmeter.backends import _registry as registry
from ragmeter.backends._tokens import token_counter
from ragmeter.errors import ConfigError, UnknownNameError
from ragmeter.runner._store import Store
from tests.backends.plugin_backend import PluginBackend


def install(site: Path, dist: str, entry_points: dict[str, str]) -> None:
    """Write the dist-info of distribution ``dist`` declaring ``entry_points``."""
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n",
                                   encoding="utf-8")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[ragmeter.backends]\n{lines}", encoding="utf-8")


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Installs the test plugins; the registry and the token counters are restored after."""
    site = tmp_path / "site"
    install(site, "ragmeter-yourplugin", {
        "yourplugin": "tests.backends.plugin_backend:PluginBackend"})
    install(site, "ragmeter-broken", {
        "brokenplugin": "tests.backends.no_such_module:Backend",
        "undeclared": "tests.backends.plugin_backend:Undeclared"})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(PluginBackend, "calls", [])
    token_counter.cache_clear()
    yield site
    token_counter.cache_clear()


MULTILINGUAL_ROWS = [
    {"question": f"q{i}?", "gold_answer": f"gold {i}", "pred_answer": f"answer {i}",
     "sample_lang": "en"} for i in range(3)]
RUBRIC_ROWS = [{"question": f"q{i}?", "reference": f"ref {i}", "response": f"answer {i}"}
               for i in range(3)]


def test_plugins_are_listed_before_being_imported(plugins):
    names = registry.backend_names()
    assert {"local", "openai", "yourplugin", "brokenplugin", "undeclared"} <= set(names)
    assert "yourplugin" not in registry._REGISTRY  # listed from the metadata, not imported


def test_an_unknown_name_loads_the_plugin_through_register_backend(plugins):
    spec = registry.backend_spec("yourplugin")
    assert registry._REGISTRY["yourplugin"] is spec
    assert spec.target == "tests.backends.plugin_backend:PluginBackend"
    assert spec.plugin == "ragmeter-yourplugin"
    assert spec.description == "Echo backend from a plugin: scores choices, first choice likeliest."
    assert spec.capabilities.choice_scoring is True and not spec.remote
    assert isinstance(registry.create_backend("yourplugin"), PluginBackend)
    # A plugin without a tokenizer counts ceil(chars / 4) through BaseBackend's default.
    assert token_counter("yourplugin", None).method == (
        "chars/4 (no tokenizer known for backend 'yourplugin')")


def test_a_typo_still_suggests_the_plugin(plugins):
    with pytest.raises(UnknownNameError, match="Did you mean: yourplugin"):
        registry.backend_spec("yourplugn")


def test_multilingual_judge_scores_choices_and_the_store_keeps_the_calls(plugins, tmp_path):
    store = tmp_path / "calls.sqlite"
    backend = ModelBackend(name="yourplugin")
    # auto picks ragmeter's fitted score for a choice-scoring backend (as trace's detector);
    # choices asks the plugin's model
    auto = ragmeter.multilingual.judge(MULTILINGUAL_ROWS, backend=backend, store=store,
                                       progress=False)
    assert auto.summary["method"] == "fitted" and not PluginBackend.calls
    result = ragmeter.multilingual.judge(MULTILINGUAL_ROWS, backend=backend, store=store,
                                         scoring="choices", progress=False)
    assert result.summary["method"] == "choices"
    assert len(PluginBackend.calls) == 3
    assert all(r.choices is not None for r in PluginBackend.calls)
    # P(yes) of ("yes", "no") with weights 2, 1: 2/3 for every answer.
    assert [row["semantic_score"] for row in result.items] == pytest.approx([2 / 3] * 3)
    keys = [r.cache_key({"backend": "yourplugin", "model": "echo-1"})
            for r in PluginBackend.calls]
    assert set(Store(store).get_many(keys)) == set(keys)  # every call kept in the store
    again = ragmeter.multilingual.judge(MULTILINGUAL_ROWS, backend=ModelBackend(name="yourplugin"),
                                        store=store, scoring="choices", progress=False)
    assert len(PluginBackend.calls) == 3  # a new backend value, the same store: no call
    assert [row["semantic_score"] for row in again.items] == \
        [row["semantic_score"] for row in result.items]


def test_rubric_judge_auto_scores_choices(plugins, tmp_path):
    result = ragmeter.rubric.judge(RUBRIC_ROWS, backend=ModelBackend(name="yourplugin"),
                                   store=tmp_path / "calls.sqlite", progress=False)
    assert len(PluginBackend.calls) == 3
    assert all(r.choices == ("0", "1", "2", "3", "4", "5") for r in PluginBackend.calls)
    assert {row["method"] for row in result.items} == {"choices:logits"}


def test_ragmeter_models_lists_the_plugins(plugins, run_cli):
    code, out, err = run_cli("models", "--json")
    assert code == 0, err
    rows = {b["name"]: b for b in json.loads(out)["backends"]}
    mine = rows["yourplugin"]
    assert mine["ready"] and mine["plugin"] == "ragmeter-yourplugin"
    assert mine["capabilities"] == {"in_process": False, "choice_scoring": True,
                                    "batching": False, "remote": False}
    broken = rows["brokenplugin"]
    assert not broken["ready"] and "ragmeter-broken" in broken["note"]
    assert "ModuleNotFoundError" in broken["note"]
    code, out, err = run_cli("models")
    assert code == 0 and "yourplugin" in out


@pytest.mark.parametrize("name, words", [
    ("brokenplugin", ["plugin backend 'brokenplugin'", "tests.backends.no_such_module:Backend",
                      "entry point of ragmeter-broken", "cannot be loaded",
                      "ModuleNotFoundError", "Fix: reinstall or uninstall ragmeter-broken"]),
    ("undeclared", ["plugin backend 'undeclared'", "declares no capabilities",
                    "ragmeter.backends.BaseBackend"]),
])
def test_a_broken_plugin_is_a_clear_error_naming_it(plugins, name, words):
    with pytest.raises(ConfigError) as info:
        registry.create_backend(name)
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_a_broken_plugin_is_exit_2_at_the_cli(plugins, run_cli, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RUBRIC_ROWS), encoding="utf-8")
    code, _, err = run_cli("rubric", "judge", str(path), "--backend", "brokenplugin",
                           "--out", str(tmp_path / "j.jsonl"))
    assert code == 2 and "Traceback" not in err
    assert "plugin backend 'brokenplugin'" in err


def test_the_web_app_offers_a_plugin_that_needs_no_url(plugins):
    from ragmeter.view.forms import Launch, backend_choices
    from ragmeter.view.verbs import SPECS

    values = [c.value for c in backend_choices()]
    assert values[0] == "local" and "yourplugin" in values
    assert not {"openai", "brokenplugin", "undeclared"} & set(values)
    launch = Launch(SPECS["multilingual-judge"], (("answers", "a.jsonl"), ("backend", "yourplugin"),
                                                  ("concurrency", 8)))
    assert launch.backend_value().name == "yourplugin"
    assert launch.command()[-2:] == ["--backend", "yourplugin"]
