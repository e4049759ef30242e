"""The one-spine layering is a test, not a hope (../shared/ARCHITECTURE.md, issue 24).

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``): imports point down the
spine (doors → families → reports → verb kit → result → judges → runs → runner → backends →
prompts → stats → io → text → _util → signature/errors/_version), the families never import
each other, and no package has an import cycle between its modules.  import-linter builds the
graph from every import, including those inside functions.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))",
         str(config)], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_import_contracts_hold() -> None:
    proc = _lint(ROOT / "pyproject.toml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Contracts: 2 kept, 0 broken." in proc.stdout


def test_the_contracts_can_fail(tmp_path: Path) -> None:
    """The same checker on a spine turned upside down reports the broken layer, so the test
    above is not one that cannot fail."""
    config = tmp_path / "upside_down.toml"
    config.write_text(textwrap.dedent("""
        [tool.importlinter]
        root_package = "ragmeter"

        [[tool.importlinter.contracts]]
        name = "upside down"
        type = "layers"
        layers = ["ragmeter.errors", "ragmeter.rgb"]
    """), encoding="utf-8")
    proc = _lint(config)
    assert proc.returncode != 0
    assert "ragmeter.rgb is not allowed to import ragmeter.errors" in proc.stdout


@pytest.mark.parametrize("family", ["rgb", "trace", "multilingual", "rubric", "reliability",
                                    "criteria"])
def test_each_family_is_one_package_with_a_thin_door(family: str) -> None:
    """A family is one package whose ``__init__`` only re-exports its verbs (no logic)."""
    import ast

    init = ROOT / "src" / "ragmeter" / family / "__init__.py"
    body = ast.parse(init.read_text(encoding="utf-8")).body
    kinds = {type(node).__name__ for node in body[1:]}  # after the docstring
    assert kinds <= {"ImportFrom", "Assign"}, kinds
    assert (ROOT / "src" / "ragmeter" / family / "_verbs.py").is_file()
