"""The files ragmeter ships inside its packages (prompts, criteria, samples, validations).

:func:`package_file` is ``importlib.resources.files(package).joinpath(*parts)`` for a package
installed as files (a wheel or an editable install), without importing
:mod:`importlib.resources`: that module brings zipfile, tempfile, shutil, bz2 and lzma, about
5 ms that every family's judged command paid before its first call (issue 26.5)."""

from __future__ import annotations

import importlib
from pathlib import Path

__all__ = ["package_file"]


def package_file(package: str, *parts: str) -> Path:
    """The path of ``parts`` inside ``package`` (``("ragmeter.rgb", "prompts", name)``)."""
    origin = importlib.import_module(package).__file__
    if origin is None:  # a namespace package: ragmeter's packages all have an __init__.py
        raise ModuleNotFoundError(f"{package} is not a regular package", name=package)
    return Path(origin).parent.joinpath(*parts)
