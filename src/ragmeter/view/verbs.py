"""The run verbs the web app can launch, one :class:`~ragmeter._verb._form.VerbSpec` each.

Each spec's ``call`` is the public function its CLI command calls (``ragmeter.generate``,
...) with the same options, so a launch from the page and a command in a shell cannot differ.
Defaults are the CLI's; the docs say where a form differs.  Families on the one-spine layout
write their forms in ``<family>/_form.py`` (``FORMS``: RGB's ``rgb run`` and ``rgb judge``,
TRACe's ``trace run``, rubric's ``rubric run``, multilingual's ``multilingual judge``).
"""

from __future__ import annotations

from typing import Any

from ragmeter._verb._form import TABLE_SUFFIXES
from ragmeter.errors import ConfigError
from ragmeter.view.forms import Field, VerbSpec

__all__ = ["SPECS", "spec_of"]

TABLES = TABLE_SUFFIXES


def _generate(args: dict[str, Any], common: dict[str, Any]) -> Any:
    from ragmeter._verb._generate import generate

    return generate(args.pop(""), **args, **common)


_HERE: tuple[VerbSpec, ...] = (
    VerbSpec(
        "generate", "generate", "generate", ("ragmeter", "generate"), call=_generate,
        about="Send a file of requests ({id, messages} or {id, system, prompt}) to a model; "
              "the responses are the run's items.",
        phases=("calls",),
        fields=(
            Field("requests", "requests", "file", required=True, suffixes=TABLES, arg="",
                  flag=None, empty_label="pick a file"),)),
)


def _all_specs() -> dict[str, VerbSpec]:
    """The forms each family writes beside its verbs (``<family>/_form.py``: ``FORMS``), in
    the order of the family table, then the ones still written here (a family's own form
    replaces one here of the same key)."""
    from ragmeter._families import FAMILIES, family_part

    specs: dict[str, VerbSpec] = {}
    for name in FAMILIES:
        for spec in family_part(name, "_form", "FORMS") or ():
            specs[spec.key] = spec
    for s in _HERE:
        specs.setdefault(s.key, s)
    return specs


SPECS: dict[str, VerbSpec] = _all_specs()


def spec_of(key: str) -> VerbSpec:
    try:
        return SPECS[key]
    except KeyError:
        raise ConfigError(f"view: no launch form {key!r}; there are "
                          f"{', '.join(SPECS)}.") from None
