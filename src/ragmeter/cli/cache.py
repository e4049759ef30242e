"""``ragmeter cache stats|clear``: look at or empty the store of model calls."""

from __future__ import annotations

import click

from ragmeter.cli.options import input_file

STORE_HELP = ("SQLite store to use [default: store.sqlite in the per-user data folder, or in "
              "$RAGMETER_HOME].")


@click.group(name="cache")
def group() -> None:
    """The store of model calls (the cache): stats and clear."""


@group.command(name="stats")
@click.option("--store", default=None, type=input_file(), metavar="PATH",
              help=STORE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON.")
def stats(store: str | None, as_json: bool) -> None:
    """How many calls, tokens and runs the store holds, by model."""
    import json

    from ragmeter._util._record import as_dict
    from ragmeter.runner._store import Store

    with Store(store) as db:
        st = db.stats()
    if as_json:
        click.echo(json.dumps(as_dict(st), indent=2))
        return
    click.echo(f"store: {st.path} (schema {st.schema_version}, {st.size_bytes / 1e6:.2f} MB)")
    click.echo(f"calls: {st.calls}  prompt tokens: {st.prompt_tokens}  completion tokens: "
               f"{st.completion_tokens}  runs: {st.runs}  item results: {st.item_results}")
    if st.runs_by_status:
        click.echo("runs by status: " + ", ".join(f"{k} {v}" for k, v in
                                                  st.runs_by_status.items()))
    for model, n in st.by_model.items():
        click.echo(f"  {model}: {n} calls")


@group.command(name="clear")
@click.option("--store", default=None, type=input_file(), metavar="PATH",
              help=STORE_HELP)
@click.option("--model", default=None, metavar="NAME",
              help="Delete only this model's calls (runs are kept).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def clear(store: str | None, model: str | None, yes: bool) -> None:
    """Delete stored calls (all of them, or one model's); the next run calls the model again."""
    from ragmeter.runner._store import Store

    with Store(store) as db:
        what = f"the calls of model {model!r}" if model else "all calls, runs and item results"
        if not yes:
            click.confirm(f"Delete {what} from {db.path}?", abort=True, err=True)
        n = db.clear(model=model)
    click.echo(f"deleted {n} calls from {db.path}", err=True)
