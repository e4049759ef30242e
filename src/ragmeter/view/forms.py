"""The launch forms of the web app, driven by one small spec per run verb.

A :class:`VerbSpec` names the verb's fields (:class:`Field`: kind, default, bounds, choices,
the CLI flag it stands for) and the public API function that runs it; :func:`validate` turns a
submitted form into a :class:`Launch` (every field checked, files only from the built-in
samples the spec offers or from the configured data folders), :func:`estimate` asks the same
function for its dry run, and :meth:`Launch.run` calls it for real.  The specs themselves
live beside each family (``ragmeter/<family>/_form.py``, types in
:mod:`ragmeter._verb._form`), collected by :mod:`ragmeter.view.verbs`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter._util import number_problem
from ragmeter._util._redact import redact_url
from ragmeter._verb._form import BACKEND_FIELDS, DATA_SUFFIXES, Field, VerbSpec
from ragmeter.backends._registry import DEFAULT_BACKEND
from ragmeter.errors import ConfigError

__all__ = ["Field", "VerbSpec", "Launch", "Estimate", "validate", "estimate", "form_defaults",
           "form_echo", "file_options", "resolve_data", "list_data_files", "SAMPLE_PREFIX",
           "BackendChoice", "backend_choices", "BACKEND_FIELDS", "ModelGroup", "EndpointModels"]

SAMPLE_PREFIX = "sample:"
MAX_TEXT = 200


@dataclass(frozen=True)
class BackendChoice:
    """One entry of the backend dropdown: a backend's name (``local``) or ``endpoint:NAME``
    (no key, ever)."""

    value: str
    label: str


def backend_choices() -> list[BackendChoice]:
    """Every backend that needs no URL (not ``remote``: the local model, a plugin's), the
    default first, and every endpoint of endpoints.toml (name, model and URL only)."""
    from ragmeter.backends._endpoints import load_endpoints

    out = [BackendChoice(name, f"{name}: {description}")
           for name, description in _urlless_backends()]
    for ep in load_endpoints().values():
        out.append(BackendChoice(f"endpoint:{ep.name}",
                                  f"{ep.name}: {ep.model} at {redact_url(ep.base_url)}"))
    return out


@dataclass(frozen=True)
class ModelGroup:
    """The models of one endpoint in the model dropdown: its own model first, then what its
    ``/models`` lists; ``note`` says why the list is short (a server that did not answer)."""

    backend: str  # the backend choice it belongs to: endpoint:NAME
    label: str
    models: tuple[str, ...]
    note: str | None = None


class EndpointModels:
    """Every endpoint's models for the launch form: fetched by the server (never the browser,
    so no key reaches a page) from each endpoint's ``GET /models`` at once with a short
    timeout, and kept ``ttl_s`` seconds, a failure too, so that pages never wait on a slow
    server more than once a minute."""

    def __init__(self, ttl_s: float = 60.0, timeout_s: float | None = None) -> None:
        import threading

        self.ttl_s = ttl_s
        self.timeout_s = timeout_s
        self._kept: dict[tuple[str, str], tuple[float, ModelGroup]] = {}
        self._lock = threading.Lock()

    def groups(self) -> list[ModelGroup]:
        """One group per endpoint of endpoints.toml, in its order."""
        import time
        from concurrent.futures import ThreadPoolExecutor

        from ragmeter.backends._endpoints import load_endpoints

        endpoints = list(load_endpoints().values())
        now = time.monotonic()
        with self._lock:
            kept = {k: g for k, (at, g) in self._kept.items() if now - at <= self.ttl_s}
        missing = [ep for ep in endpoints if (ep.name, ep.base_url) not in kept]
        if missing:
            with ThreadPoolExecutor(max_workers=min(8, len(missing))) as pool:
                for ep, group in zip(missing, pool.map(self._fetch, missing), strict=True):
                    kept[(ep.name, ep.base_url)] = group
            with self._lock:
                self._kept.update({k: (now, g) for k, g in kept.items()})
        return [kept[(ep.name, ep.base_url)] for ep in endpoints]

    def _fetch(self, endpoint: Any) -> ModelGroup:
        from ragmeter.backends._endpoints import MODELS_TIMEOUT_S

        listed, problem = endpoint.list_models(self.timeout_s or MODELS_TIMEOUT_S)
        models = tuple(dict.fromkeys([endpoint.model, *listed]))
        note = f"its model list: {problem}" if problem else None
        return ModelGroup(f"endpoint:{endpoint.name}", endpoint.name, models, note)

    def check(self, backend: str, model: str) -> None:
        """ConfigError unless ``model`` is one the endpoint ``backend`` offers."""
        if not backend.startswith("endpoint:"):
            raise ConfigError(f"view: model {model!r}: the {backend} backend has one model. "
                              "Fix: leave the model empty, or pick an endpoint.")
        group = next((g for g in self.groups() if g.backend == backend), None)
        if group is None or model not in group.models:
            raise ConfigError(f"view: model {model!r} is not one endpoint "
                              f"{backend.split(':', 1)[1]} lists. Fix: pick one from the list.")


def _urlless_backends() -> list[tuple[str, str]]:
    """``(name, description)`` of the registered backends that take no URL, the default
    first (a plugin that cannot be loaded is left out; ``ragmeter models`` says why)."""
    from ragmeter.backends._registry import backend_names, backend_spec
    from ragmeter.errors import UserError

    out = []
    for name in sorted(backend_names(), key=lambda n: (n != DEFAULT_BACKEND, n)):
        try:
            spec = backend_spec(name)
            remote = spec.capabilities.remote
        except UserError:
            continue
        if not remote:
            out.append((name, spec.description))
    return out


@dataclass(frozen=True)
class Launch:
    """A validated form: the spec and the value of every field (files resolved to paths)."""

    spec: VerbSpec
    values: tuple[tuple[str, Any], ...]

    def get(self, name: str) -> Any:
        return dict(self.values)[name]

    @property
    def title(self) -> str:
        return self.spec.title

    def command(self) -> list[str]:
        """The equivalent command line (stored in the run record; output flags aside)."""
        values = dict(self.values)
        out = list(self.spec.command)
        for f in self.spec.all_fields():
            if f.flag is None and values.get(f.name) is not None:
                out.append(str(values[f.name]))
        backend = values.get("backend") or DEFAULT_BACKEND
        if backend.startswith("endpoint:"):
            out += ["--endpoint", backend.split(":", 1)[1]]
        elif backend != DEFAULT_BACKEND:
            out += ["--backend", backend]
        for f in self.spec.all_fields():
            value = values.get(f.name)
            if not f.flag or value is None or _shown(f, value) == f.default:
                continue
            out += [f.flag, _shown(f, value)]
        return out

    def backend_value(self) -> Any:
        """The :mod:`ragmeter.backends` value of the CLI's options this launch stands for."""
        from ragmeter.backends import from_options

        values = dict(self.values)
        choice = values.get("backend") or DEFAULT_BACKEND
        opts: dict[str, Any] = {"concurrency": values.get("concurrency") or 8,
                                "price_prompt": values.get("price_prompt"),
                                "price_completion": values.get("price_completion")}
        if choice.startswith("endpoint:"):
            opts["endpoint"] = choice.split(":", 1)[1]
            opts["model"] = values.get("model")  # None: the endpoint's own
        elif choice in dict(_urlless_backends()):
            opts["backend"] = choice
        else:
            raise ConfigError(f"view: unknown backend choice {choice!r}.")
        return from_options(**opts)

    def run(self, *, store_path: str | None, on_progress: Callable[..., None] | None = None,
            dry_run: bool = False) -> Any:
        """Call the verb's public function (as its CLI command does); returns its Result."""
        args = {f.api_name: v for f in self.spec.fields
                for k, v in self.values if k == f.name}
        common: dict[str, Any] = {"dry_run": dry_run, "progress": False}
        if self.spec.uses_backend:
            common["backend"] = self.backend_value()
        if self.spec.uses_backend or self.spec.uses_store:
            common["store"] = store_path
            if not dry_run:
                common["on_progress"] = on_progress
        return self.spec.call(args, common)


def _shown(f: Field, value: Any) -> str:
    if f.kind == "rates":
        return ",".join(f"{r:g}" for r in value)
    if f.kind == "float":
        return f"{value:g}"
    return str(value)


def form_defaults(spec: VerbSpec) -> dict[str, str]:
    return {f.name: f.default for f in spec.all_fields()}


def form_echo(spec: VerbSpec, form: Mapping[str, str]) -> dict[str, str]:
    """The submitted values of the spec's fields (for the form shown again)."""
    out = form_defaults(spec)
    out.update({k: v for k, v in form.items() if k in out})
    return out


def _number(spec: VerbSpec, f: Field, text: str) -> float | int:
    try:
        value: float | int = int(text) if f.kind == "int" else float(text)
    except ValueError:
        what = "a whole number" if f.kind == "int" else "a number"
        raise ConfigError(f"view: {spec.title}: {f.label} {text!r} is not {what}.") from None
    if (problem := number_problem(value)) is not None:  # nan, inf, 1e999 (issue 29.3)
        raise ConfigError(f"view: {spec.title}: {f.label} {problem}")
    if (f.lo is not None and not value >= f.lo) or (f.hi is not None and not value <= f.hi):
        lo = "" if f.lo is None else f"{f.lo:g}"
        hi = "" if f.hi is None else f"{f.hi:g}"
        raise ConfigError(f"view: {spec.title}: {f.label} must be in [{lo}..{hi}], got {text}.")
    return value


def _value(spec: VerbSpec, f: Field, text: str, data_dirs: list[Path]) -> Any:
    text = text.strip()
    if f.kind == "backend":
        if text not in {c.value for c in backend_choices()}:
            raise ConfigError(f"view: unknown backend {text!r}. Fix: pick one from the list.")
        return text
    if f.kind == "choice":
        if text not in f.choices:
            raise ConfigError(f"view: {spec.title}: {f.label} {text!r} is not one of "
                              f"{', '.join(f.choices)}.")
        return text
    if not text:
        if f.required:
            raise ConfigError(f"view: {spec.title}: {f.label} is required. Fix: "
                              + ("pick a file from the list." if f.kind == "file"
                                 else "fill it in."))
        return None
    if f.kind in ("int", "float"):
        return _number(spec, f, text)
    if f.kind == "rates":
        from ragmeter.rgb._verbs import _rates  # the API's own parser of "0,0.4,0.8"

        return _rates(text, f.label)
    if f.kind == "file":
        if text.startswith(SAMPLE_PREFIX):
            name = text[len(SAMPLE_PREFIX):]
            if name not in f.samples:
                raise ConfigError(f"view: {spec.title}: {name!r} is no built-in sample for "
                                  f"{f.label}.")
            from ragmeter.io._samples import sample_path

            return str(sample_path(name))
        return resolve_data(text, data_dirs)
    if len(text) > MAX_TEXT:
        raise ConfigError(f"view: {spec.title}: {f.label} is longer than {MAX_TEXT} characters.")
    return text


def validate(spec: VerbSpec, form: Mapping[str, str], data_dirs: list[Path],
             models: EndpointModels | None = None) -> Launch:
    """Check every field of ``form`` against ``spec``; a one-line ConfigError names the first
    field that is wrong.  A model must be one its endpoint lists (``models``: the app's kept
    lists; default: asked now)."""
    values = {f.name: _value(spec, f, form.get(f.name, f.default), data_dirs)
              for f in spec.all_fields()}
    if values.get("model") is not None:
        (models or EndpointModels()).check(values.get("backend") or DEFAULT_BACKEND,
                                           values["model"])
    if spec.check is not None:
        spec.check(values)
    return Launch(spec, tuple(values.items()))


@dataclass(frozen=True)
class Estimate:
    """The dry run shown before a start: the runner's counts, and the verb's own words."""

    requests: int = 0
    cached: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens_max: int = 0
    token_method: str = "chars/4"
    cost_usd_max: float | None = None
    text: str = ""


def estimate(launch: Launch, store_path: str | None = None) -> Estimate:
    """What the verb's ``--dry-run`` says (calls, tokens, money at the given prices): the same
    function with ``dry_run=True``; nothing is called."""
    result = launch.run(store_path=store_path, dry_run=True)
    summary = result.summary
    known = {f.name for f in dataclasses.fields(Estimate)} - {"text"}
    counts = {k: summary[k] for k in known if summary.get(k) is not None}
    return Estimate(**counts, text=str(getattr(result, "dry_run_text", "") or ""))


def resolve_data(name: str, folders: list[Path]) -> str:
    """A data file chosen in the form: must lie inside one of the configured data folders."""
    if not name:
        raise ConfigError("view: no data file given.")
    for folder in folders:
        base = folder.resolve()
        candidate = (base / name).resolve()
        if candidate.is_file() and candidate.is_relative_to(base):
            return str(candidate)
    raise ConfigError(f"view: data file {name!r} is not in a configured data folder. Fix: start "
                      "ragmeter view with --data-dir FOLDER and pick a file listed there.")


def list_data_files(folders: list[Path], limit: int = 500,
                    suffixes: tuple[str, ...] = DATA_SUFFIXES) -> list[str]:
    """Files with one of ``suffixes`` under the data folders, relative names (no links out)."""
    out: list[str] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        base = folder.resolve()
        for p in sorted(folder.rglob("*")):
            if p.suffix in suffixes and p.is_file() \
                    and p.resolve().is_relative_to(base):  # no links out of the folder
                out.append(str(p.relative_to(folder)))
                if len(out) >= limit:
                    return out
    return out


def file_options(f: Field, data_dirs: list[Path]) -> list[tuple[str, str]]:
    """``(value, label)`` of a file field's dropdown: its built-in samples, then the files of
    the data folders with its suffixes."""
    out = [(SAMPLE_PREFIX + s, f"built-in sample: {s}") for s in f.samples]
    out += [(name, name) for name in list_data_files(data_dirs, suffixes=f.suffixes)]
    return out
