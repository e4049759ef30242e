"""``ragmeter view``: serve the local web app over the run records and the store."""

from __future__ import annotations

import time

import click

__all__ = ["view"]


@click.command(name="view")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback requires a token.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port to bind (0: any free port).")
@click.option("--token", default=None, metavar="VALUE",
              help="Access token: required on every request (Authorization: Bearer VALUE, or "
                   "?token=VALUE once, which sets a cookie) [default: none on loopback; "
                   "generated and printed for any other address].")
@click.option("--runs-dir", "runs_dir", default=None, type=click.Path(file_okay=False),
              help="Folder of run records [default: $RAGMETER_HOME/runs].")
@click.option("--store", "store", default=None, type=click.Path(dir_okay=False),
              help="SQLite store of calls used by launched jobs [default: the usual store].")
@click.option("--data-dir", "data_dirs", multiple=True, type=click.Path(file_okay=False,
                                                                        exists=True),
              help="A folder of data files the launch forms may use (repeatable); no other "
                   "file is ever read on the browser's request.")
@click.option("--max-jobs", default=2, show_default=True, type=click.IntRange(1, 64),
              help="Jobs launched from the page that run at once; later ones wait in a queue.")
def view(host: str, port: int, token: str | None, runs_dir: str | None, store: str | None,
         data_dirs: tuple[str, ...], max_jobs: int) -> None:
    """Serve a local web app: the list of stored runs, one run's page, a comparison of runs,
    launch forms for the run verbs (rgb run/judge, trace run, rubric run, multilingual judge,
    generate) with a dry-run estimate first, and live progress of up to --max-jobs jobs.

    Example: ragmeter view --port 8000   (then open http://127.0.0.1:8000/)
    """
    from pathlib import Path

    from ragmeter.view.server import require_view_extra, serve

    started = time.monotonic()
    require_view_extra()
    from ragmeter.view.app import ViewSettings
    from ragmeter.view.security import Security, token_problem

    problem = token_problem(host, token)
    if problem is not None:
        raise click.BadParameter(problem, param_hint="'--token'")
    security, generated = Security.for_bind(host, port, token)
    settings = ViewSettings(runs_dir=runs_dir, store_path=store,
                            data_dirs=[Path(d) for d in data_dirs], security=security,
                            max_jobs=max_jobs)
    if generated:
        click.echo(f"token: {security.token}  (generated: every request needs it)", err=True)

    def ready(bound: int) -> None:
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        url = f"http://{shown}:{bound}/"
        if security.token:
            url += f"?token={security.token}"
        click.echo(f"ragmeter view: serving on {url} (ready in "
                   f"{time.monotonic() - started:.2f} s; Ctrl-C stops)", err=True)

    serve(settings, on_ready=ready)
