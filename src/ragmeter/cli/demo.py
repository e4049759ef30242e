"""``ragmeter demo``: ragmeter's main job on its built-in sample."""

from __future__ import annotations

from pathlib import Path

import click


@click.command(name="demo")
@click.option("--out", "out_dir", default="ragmeter-out", show_default=True,
              type=click.Path(file_okay=False),
              help="Folder for the demo's results.")
def demo(out_dir: str) -> None:
    """Score the built-in multilingual sample (written by the ragmeter authors) and write
    its results to OUT.

    Example: ragmeter demo --out ragmeter-out
    """
    from ragmeter.io import write_json, write_jsonl
    from ragmeter.reports.console import console, print_multilingual
    from ragmeter.samples import sample_path
    from ragmeter.suites.multilingual import MultilingualConfig, score_file

    out = Path(out_dir)
    sample = sample_path("multilingual_answers.jsonl")
    con = console()
    con.print(f"[bold]ragmeter demo[/bold]: scoring the built-in multilingual sample {sample.name}")
    result = score_file(sample, MultilingualConfig(ci=True, paired=True))
    print_multilingual(result)
    write_json(out / "multilingual.json", result.to_json())
    write_jsonl(out / "multilingual_items.jsonl", result.iter_items())
    con.print(f"results written to {out / 'multilingual.json'} and "
              f"{out / 'multilingual_items.jsonl'}")
