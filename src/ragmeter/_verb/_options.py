"""Typed option groups shared by the verbs of every family (issue 24).

A verb takes its data, the few options that define its measurement, and groups:

* ``backend``: a :class:`ragmeter.backends.ModelBackend` (which model, how to reach it, its
  concurrency, limits and prices);
* ``run``: :class:`RunOptions` (the store, replay, dry run, progress): how calls are made,
  never what a number is;
* ``output``: :class:`OutputOptions` (intervals, resampling, ``--by`` groups): what is reported
  beside the defaults;
* ``engine``: :class:`EngineOptions` (one process or Ray) for verbs that scale out without a
  model;
* family groups for the rest (e.g. a family's judge options), defined in the family.

Every field is named exactly as its CLI flag (``--noise-rate`` is ``noise_rate``, and the JSON
key ``noise_rate``).  For the verbs written before the groups, the same names are still
accepted as plain keywords (``ragmeter.multilingual.score(df, ci=True)``): :func:`gather`
routes each into its group, and an unknown name is a ``TypeError`` that lists the valid ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["RunOptions", "OutputOptions", "EngineOptions", "gather", "names"]

G = TypeVar("G")


@dataclass(frozen=True)
class RunOptions:
    """How a judged verb makes its calls; none of these changes a number.

    ``store``: a :class:`ragmeter.runner.Store`, a path, or None for the default store.
    ``replay``: answer only from the store (a miss is an error).  ``dry_run``: count the
    calls, tokens and money without calling.  ``progress``: a progress bar (default: when
    stderr is a terminal).  ``on_progress(stats, done, todo)``: called as calls finish.
    """

    store: Any = None
    replay: bool = False
    dry_run: bool = False
    progress: bool | None = None
    on_progress: Callable[..., Any] | None = None


@dataclass(frozen=True)
class OutputOptions:
    """What a verb reports beside its exact defaults: ``ci`` (95% intervals), ``resamples``
    and ``seed`` (of the bootstrap), ``by`` (the same numbers per group of items sharing this
    field)."""

    ci: bool = False
    resamples: int = 1000
    seed: int = 12345
    by: str | None = None

    def __post_init__(self) -> None:
        from ragmeter._util import check_number

        check_number(self.resamples, "resamples=", lo=0, whole=True)
        check_number(self.seed, "seed=", whole=True)
        if self.by is not None and not isinstance(self.by, str):
            from ragmeter.errors import ConfigError

            raise ConfigError(f"ragmeter: by= takes one field name, got "
                              f"{type(self.by).__name__}. Fix: by=\"lang\".")


@dataclass(frozen=True)
class EngineOptions:
    """Where per-item work runs: ``engine`` ``local`` (this process) or ``ray``;
    ``ray_address`` (a cluster; None starts Ray here), ``ray_workers`` workers of
    ``ray_cpus_per_worker`` CPUs each (docs/scale.md)."""

    engine: str = "local"
    ray_address: str | None = None
    ray_workers: int = 2
    ray_cpus_per_worker: int = 1

    def __post_init__(self) -> None:
        from ragmeter._util import check_number

        check_number(self.ray_workers, "ray_workers=", lo=1, whole=True)
        check_number(self.ray_cpus_per_worker, "ray_cpus_per_worker=", lo=1, whole=True)


def gather(verb: str, options: Mapping[str, Any], **groups: tuple[type[Any], Any]
           ) -> dict[str, Any]:
    """Each group, filled: ``groups`` maps a group's name to ``(its class, the instance the
    caller gave or None)``; ``options`` are plain keywords named as the groups' fields, each
    overriding that field of the given group.  A keyword no group has raises ``TypeError``
    naming the valid ones (with a did-you-mean)::

        run, output = gather("multilingual.score", kwargs, run=(RunOptions, run),
                             output=(OutputOptions, output)).values()
    """
    owner: dict[str, str] = {}
    for name, (cls, _) in groups.items():
        for f in dataclasses.fields(cls):
            owner.setdefault(f.name, name)
    unknown = [k for k in options if k not in owner]
    if unknown:
        valid = sorted(owner)
        import difflib  # a did-you-mean, on the error path only

        close = difflib.get_close_matches(unknown[0], valid, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise TypeError(f"{verb}() got an unexpected keyword argument {unknown[0]!r}.{hint} "
                        f"Options it takes: {', '.join(valid)}.")
    out: dict[str, Any] = {}
    for name, (cls, given) in groups.items():
        if given is not None and not isinstance(given, cls):
            raise TypeError(f"{verb}(): {name}= takes a {cls.__name__}, got "
                            f"{type(given).__name__}.")
        base = given if given is not None else cls()
        mine = {k: v for k, v in options.items() if owner[k] == name}
        out[name] = dataclasses.replace(base, **mine) if mine else base
        _finite_fields(verb, out[name])
    return out


def _finite_fields(verb: str, group: Any) -> None:
    """Every number of an option group, a family's own groups included, is finite: a
    ``threshold=nan`` passes every range check written as ``x < lo or x > hi`` (issue 29.3).
    Ranges stay the group's own business."""
    from ragmeter._util import is_finite_number, number_problem

    for f in dataclasses.fields(group):
        value = getattr(group, f.name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and not is_finite_number(value):
            from ragmeter.errors import ConfigError

            raise ConfigError(f"{verb.split('.')[0]}: {f.name}= {number_problem(value)}")


def names(value: Any, arg: str, component: str) -> tuple[str, ...]:
    """An option that takes one name or several (``by``, ``flag_yes``, ``fields``) as a tuple
    of names: one string is one name (``by="lang"``, never the letters of ``lang``); None is
    none; a list (any iterable) of strings is those.  Anything else is a one-line ConfigError
    naming the argument (issue 29.9)."""
    from ragmeter.errors import ConfigError

    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable) and not isinstance(value, (Mapping, bytes)):
        items = tuple(value)
        wrong = [v for v in items if not isinstance(v, str)]
        if not wrong:
            return items
        got = f"a list holding {type(wrong[0]).__name__}"
    else:
        got = type(value).__name__
    raise ConfigError(f"{component}: {arg}= takes a column name or a list of column names, "
                      f"got {got}. Fix: {arg}=\"lang\" or {arg}=[\"lang\", \"model_name\"].")
