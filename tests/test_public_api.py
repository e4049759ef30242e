"""The public API is exactly ``__all__``; ``import ragmeter`` stays light; every command has
--help; --version and ``python -m ragmeter`` work."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ragmeter
from ragmeter.cli import COMMANDS, cli


def test_public_names_equal_all() -> None:
    import types

    for name in ragmeter.__all__:
        assert hasattr(ragmeter, name)
    # Private submodules become attributes once imported anywhere; they are not API names.
    public = {n for n in dir(ragmeter) if not n.startswith("_")
              and (n in ragmeter.__all__
                   or not isinstance(getattr(ragmeter, n), types.ModuleType))}
    assert public == set(ragmeter.__all__) - {"__version__"}


def test_import_is_light() -> None:
    code = ("import sys, ragmeter; heavy = [m for m in ('torch', 'transformers', 'numpy', "
            "'scipy', 'pyarrow', 'matplotlib', 'httpx', 'rich') if m in sys.modules]; "
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _all_commands():
    import click

    ctx = click.Context(cli)
    stack = [((), cli)]
    while stack:
        path, cmd = stack.pop()
        yield path
        if isinstance(cmd, click.Group):
            sub_ctx = click.Context(cmd, parent=ctx)
            for name in cmd.list_commands(sub_ctx):
                stack.append(((*path, name), cmd.get_command(sub_ctx, name)))


def test_every_command_has_help(run_cli) -> None:
    paths = list(_all_commands())
    assert ("multilingual", "score") in paths
    assert set(COMMANDS) <= {p[0] for p in paths if p}
    for path in paths:
        code, out, err = run_cli(*path, "--help")
        assert code == 0, (path, err)
        assert "Usage:" in out, path


def test_version_and_module_entry_point() -> None:
    out = subprocess.run([sys.executable, "-m", "ragmeter", "--version"], capture_output=True,
                         text=True, check=True)
    assert ragmeter.__version__ in out.stdout


@pytest.mark.parametrize("args", [("multilingal",), ("multilingual", "scor")])
def test_unknown_command_did_you_mean(run_cli, args) -> None:
    code, _, err = run_cli(*args)
    assert code == 2
    assert "Did you mean" in err


def test_import_loads_only_its_own_small_modules() -> None:
    """Issue 14's ``import ragmeter`` < 0.1 s, checked without timing (times are measured in
    benchmarks, not tests): the import loads ragmeter's three start-up modules and the standard
    library's basics only, so it cannot be slow."""
    code = ("import sys; before = set(sys.modules); import ragmeter; "
            "print('\\n'.join(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert sorted(m for m in out if m.startswith("ragmeter")) == [
        "ragmeter", "ragmeter._version", "ragmeter.errors"]
    assert len(out) < 60, out  # stdlib basics (re, pathlib, typing ...): 39 on CPython 3.11


def test_version_needs_no_package_metadata() -> None:
    from pathlib import Path

    code = "import sys, ragmeter; print('importlib.metadata' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert 'version = { attr = "ragmeter._version.__version__" }' in pyproject
