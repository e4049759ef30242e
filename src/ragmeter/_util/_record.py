"""Small value classes without :mod:`dataclasses` (issue 26.5).

Creating a dataclass compiles its generated methods with ``exec`` (0.4-1 ms per class on
Python 3.11); the types a judged command builds before its first call paid that for ~15
classes.  :func:`record` gives a plain class with ``__slots__`` the methods a frozen (or plain)
dataclass would have: ``__eq__``, ``__hash__``, ``__repr__`` and ``__match_args__``, computed
from the class's ``__slots__`` in their order (no ``exec``), an error on assignment
(:class:`dataclasses.FrozenInstanceError`, as before), and pickling by its fields.  The class
writes its own ``__init__`` (fields positional in ``__slots__`` order, then keywords), which
keeps the signature visible to mypy and the call as fast as a dataclass's.
:func:`replace` and :func:`as_dict` stand in for ``dataclasses.replace`` / ``asdict``
(shallow: a record's fields are values, a dict field is copied one level).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["record", "replace", "as_dict", "set_field"]

T = TypeVar("T")

# Sets a field of a frozen record from its ``__init__``: ``object.__setattr__`` itself (a C
# call, as a frozen dataclass's generated ``__init__`` makes; no Python frame per field).
set_field: Callable[[object, str, Any], None] = object.__setattr__


def _frozen_error(name: str) -> AttributeError:
    from dataclasses import FrozenInstanceError  # only on the error path

    return FrozenInstanceError(f"cannot assign to field {name!r}")


def record(*, frozen: bool = True, eq: bool = True, compare_exclude: tuple[str, ...] = (),
           repr_exclude: tuple[str, ...] = ()) -> Callable[[T], T]:
    """Give the decorated ``__slots__`` class a dataclass's methods; see the module.  The
    arguments are those of ``@dataclass`` (``eq=False``: compared and hashed by identity) and
    the fields' ``compare=False`` / ``repr=False``."""

    def build(cls: Any) -> Any:
        names: tuple[str, ...] = tuple(cls.__slots__)
        compared = tuple(n for n in names if n not in compare_exclude)
        shown = tuple(n for n in names if n not in repr_exclude)

        def _key(self: Any) -> tuple[Any, ...]:
            return tuple(getattr(self, n) for n in compared)

        def __eq__(self: Any, other: object) -> Any:
            if other.__class__ is self.__class__:
                return _key(self) == _key(other)
            return NotImplemented

        def __repr__(self: Any) -> str:
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
            return f"{self.__class__.__qualname__}({inner})"

        def __reduce__(self: Any) -> tuple[Any, tuple[Any, ...]]:
            return self.__class__, tuple(getattr(self, n) for n in names)

        if eq:
            cls.__eq__ = __eq__
        cls.__repr__ = __repr__
        cls.__reduce__ = __reduce__
        setattr(cls, "__match_args__", names)  # noqa: B010 (mypy: a class's own)
        cls._record_fields = names
        if frozen:
            def __hash__(self: Any) -> int:
                return hash(_key(self))

            def __setattr__(self: Any, name: str, value: Any) -> None:
                raise _frozen_error(name)

            def __delattr__(self: Any, name: str) -> None:
                raise _frozen_error(name)

            if eq:
                cls.__hash__ = __hash__
            cls.__setattr__ = __setattr__
            cls.__delattr__ = __delattr__
        elif eq:
            cls.__hash__ = None  # mutable and compared by value: unhashable, as a dataclass
        return cls

    return build


def as_dict(obj: Any) -> dict[str, Any]:
    """The fields of a record as a dict, in order (a dict value is copied one level)."""
    return {n: (dict(v) if isinstance(v, dict) else v)
            for n in obj._record_fields for v in (getattr(obj, n),)}


def replace(obj: T, **changes: Any) -> T:
    """A copy of the record ``obj`` with ``changes`` (as ``dataclasses.replace``)."""
    fields = obj._record_fields  # type: ignore[attr-defined]
    unknown = set(changes) - set(fields)
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field {sorted(unknown)[0]!r}")
    return type(obj)(**{n: changes[n] if n in changes else getattr(obj, n)  # type: ignore[call-arg]
                        for n in fields})
