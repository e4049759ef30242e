"""Every family's command group behaves alike (ragmeter.cli._group.LazyGroup): a mistyped
subcommand gets ragmeter's did-you-mean line, and the group's help lists commands imported on
first use with their registered one-line help, without importing them."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("family, typo, hint", [
    ("trace", "lable", "label"), ("trace", "scroe", "score"),
    ("multilingual", "jduge", "judge"), ("multilingual", "scroe", "score"),
])
def test_a_mistyped_subcommand_gets_the_same_hint_in_every_family(run_cli, family, typo, hint):
    code, _, err = run_cli(family, typo)
    assert code == 2
    assert f"Error: No such command '{typo}'. Did you mean: {hint}?" in err


def test_trace_help_lists_label_and_run_without_importing_them() -> None:
    probe = ("import sys; from ragmeter.cli import main\n"
             "try:\n    main(['trace', '--help'])\nexcept SystemExit:\n    pass\n"
             "print('IMPORTED' if 'ragmeter.cli.trace_judge' in sys.modules else 'NOT')")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert "  label     Label (question, documents, response) rows with a judge.\n" in out
    assert "  run       Label an annotated split with a judge and validate it.\n" in out
    assert "  score     Compute TRACe relevance" in out  # eagerly defined, click's short help
    assert out.rstrip().endswith("NOT")


def test_a_defined_command_keeps_click_short_help_width(run_cli) -> None:
    code, out, _ = run_cli("multilingual", "--help")
    assert code == 0
    # cut where click's own group cuts it (the width less the longest name), not at 45
    assert "  score  Score an answers file: EM, F1, RLC and RLC_OK recomputed from" in out
