"""The web app's launch form of a verb, as data: :class:`VerbSpec` (its fields and the public
function behind it) and :class:`Field`.  Each family writes the forms of its verbs in its own
``_form.py`` (``FORMS``), with these types; :mod:`ragmeter.view` collects them through
:mod:`ragmeter._families`, validates submissions and launches them.  Only types live here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Field", "VerbSpec", "BACKEND_FIELDS", "DATA_SUFFIXES", "TABLE_SUFFIXES", "LIMIT"]

DATA_SUFFIXES = (".json", ".jsonl")
TABLE_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")  # files of rows (predictions ...)


@dataclass(frozen=True)
class Field:
    """One input of a launch form.

    ``kind``: ``backend`` (the dropdown of configured backends), ``model`` (the models the
    chosen endpoint lists, empty for its own model), ``choice``, ``int``,
    ``float``, ``rates`` (comma-separated numbers in [0, 1]), ``text`` or ``file`` (a built-in
    sample named in ``samples`` or a file with one of ``suffixes`` from the data folders).
    An empty ``int``/``float``/``file`` is ``None`` unless ``required``.
    ``flag``: the CLI flag it stands for (``None``: a positional argument; ``""``: none).
    ``arg``: the API keyword (default: ``name``; ``""``: the function's first argument).
    """

    name: str
    label: str
    kind: str = "text"
    default: str = ""
    choices: tuple[str, ...] = ()
    lo: float | None = None
    hi: float | None = None
    required: bool = False
    samples: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = DATA_SUFFIXES
    empty_label: str = "—"
    help: str = ""
    flag: str | None = ""
    arg: str | None = None

    @property
    def api_name(self) -> str:
        return self.name if self.arg is None else self.arg


# The backend fields every model verb shares (the CLI's backend flags).
BACKEND_FIELDS = (
    Field("backend", "backend", "backend", "local", flag=""),
    Field("model", "model", "model", "", flag="--model",
          empty_label="the backend's own model",
          help="an endpoint's models, as its /v1/models lists them"),
    Field("concurrency", "concurrency", "int", "8", lo=1, hi=256, flag="--concurrency"),
    Field("price_prompt", "USD / M prompt tokens", "float", lo=0, flag="--price-in"),
    Field("price_completion", "USD / M completion tokens", "float", lo=0, flag="--price-out"),
)


@dataclass(frozen=True)
class VerbSpec:
    """A run verb the page can launch: its fields and the public function behind it.

    ``call(args, common)`` runs the verb: ``args`` are the validated field values under their
    API names (the positional data under ``""``), ``common`` the keywords every judged verb
    takes (``backend``, ``store``, ``dry_run``, ``progress``, ``on_progress``; a verb with
    ``uses_store`` and no backend gets all but ``backend``).
    ``check(values)`` validates across fields.  ``phases`` name the runner passes in order.
    """

    key: str
    title: str
    family: str
    command: tuple[str, ...]
    fields: tuple[Field, ...]
    call: Callable[[dict[str, Any], dict[str, Any]], Any]
    about: str = ""
    phases: tuple[str, ...] = ()
    check: Callable[[dict[str, Any]], None] | None = None
    uses_backend: bool = True
    # calls through the runner without a model backend (``app run``): gets ``store`` and
    # ``on_progress`` in ``common`` like a model verb, and no backend fields
    uses_store: bool = False

    def all_fields(self) -> tuple[Field, ...]:
        return self.fields + (BACKEND_FIELDS if self.uses_backend else ())

    def field(self, name: str) -> Field:
        return next(f for f in self.all_fields() if f.name == name)


# The --limit field of the verbs that can run on the first N items.
LIMIT = Field("limit", "sample size", "int", lo=1, hi=100_000, flag="--limit",
              empty_label="all")
