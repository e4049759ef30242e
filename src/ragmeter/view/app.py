"""The Starlette application of ``ragmeter view``: pages, the launch forms, the job list and the
progress streams.

Pages are Jinja2 templates (autoescaped) around fragments built by the HTML report's own
functions (:func:`ragmeter.reports.html.render_run`, :func:`render_comparison`), so a run's page
shows what ``ragmeter report`` writes for it.  Run records are read through
:mod:`ragmeter.runs._records` only; run ids from the URL are looked up among the listed runs, never
used as paths.  Launch forms come from the specs of :mod:`ragmeter.view.verbs` (validated by
:mod:`ragmeter.view.forms`); jobs run through :mod:`ragmeter.view.jobs`.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, UserError
from ragmeter.view.forms import (
    EndpointModels,
    VerbSpec,
    backend_choices,
    estimate,
    file_options,
    form_defaults,
    form_echo,
    validate,
)
from ragmeter.view.jobs import FINISHED, JobManager
from ragmeter.view.listing import RunIndex
from ragmeter.view.security import FORM_KEY, Security, SecurityMiddleware
from ragmeter.view.verbs import SPECS, spec_of

__all__ = ["ViewSettings", "create_app"]

PAGE_SIZE = 100
MAX_COMPARE = 8
RENDERED_KEPT = 32  # run pages kept rendered in memory
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,200}$")
_HERE = Path(__file__).parent


@dataclass
class ViewSettings:
    """What the app serves: the runs dir, the store, the data folders, its security."""

    runs_dir: str | None = None
    store_path: str | None = None
    data_dirs: list[Path] = field(default_factory=list)
    security: Security = field(default_factory=Security)
    list_ttl_s: float = 30.0
    max_jobs: int = 2


def _templates() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(_HERE / "templates")),
                             autoescape=True)
    env.filters["num"] = _num
    return env


def _num(value: Any, digits: int = 3) -> str:
    from ragmeter.reports._html import number

    return number(value, digits)


def _safe(fragment: Any) -> Any:
    """Markup the report built (already escaped) as Jinja markup."""
    import markupsafe

    return markupsafe.Markup(str(fragment))


def create_app(settings: ViewSettings) -> Any:
    """The ASGI app (Starlette, wrapped in :class:`SecurityMiddleware`)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Route

    env = _templates()
    sec = settings.security
    index = RunIndex(settings.runs_dir, ttl_s=settings.list_ttl_s)
    models = EndpointModels()  # each endpoint's /models, kept a minute
    jobs = JobManager(store_path=settings.store_path, runs_dir=settings.runs_dir,
                      max_jobs=settings.max_jobs, on_finished=index.invalidate)

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("title", "ragmeter view")
        html = env.get_template(name).render(csrf=sec.csrf, counts=jobs.counts(), specs=SPECS,
                                               **context)
        return HTMLResponse(html, status_code=status)

    def error(message: str, status: int = 400) -> HTMLResponse:
        return page("error.html", status=status, title="error", message=message)

    def load(run_id: str) -> Any:
        from ragmeter.runs._records import load_run

        if not _RUN_ID.match(run_id) or run_id.endswith(".json"):
            raise ConfigError(f"view: {run_id!r} is not a run id.")
        if not index.known(run_id):
            raise ConfigError(f"view: no stored run {run_id!r}.")
        return load_run(run_id, runs_dir_override=settings.runs_dir)

    async def form_of(request: Request) -> dict[str, str]:
        """The POST's form, read, size-checked and CSRF-checked by the security middleware
        (the only reader of request bodies, :mod:`ragmeter.view.security`)."""
        form = request.scope.get(FORM_KEY)
        if not isinstance(form, dict):  # the app served without its middleware
            raise PermissionError("view: the form's CSRF token is wrong; reload the page and "
                                  "submit again.")
        return form

    # ------------------------------------------------------------------ pages

    def runs_page(request: Request) -> HTMLResponse:
        if request.query_params.get("refresh"):
            index.invalidate()
        rows = index.rows()
        families = sorted({r.family for r in rows})
        family = request.query_params.get("family") or ""
        if family:
            rows = [r for r in rows if r.family == family]
        try:
            number = max(1, int(request.query_params.get("page") or 1))
        except ValueError:
            number = 1
        pages = max(1, -(-len(rows) // PAGE_SIZE))
        number = min(number, pages)
        shown = rows[(number - 1) * PAGE_SIZE:number * PAGE_SIZE]
        return page("runs.html", title="ragmeter runs", rows=shown, total=len(rows),
                    families=families, family=family, page=number, pages=pages)

    rendered: OrderedDict[str, Any] = OrderedDict()  # run id -> body (records never change)
    rendered_lock = threading.Lock()

    def run_page(request: Request) -> HTMLResponse:
        from ragmeter.reports.html import render_run

        try:
            record = load(request.path_params["run_id"])
        except UserError as err:
            return error(str(err), 404)
        with rendered_lock:
            body = rendered.get(record.run_id)
        if body is None:
            body = _safe(render_run(record, 1))  # plots take seconds: kept for the next visit
            with rendered_lock:
                rendered[record.run_id] = body
                while len(rendered) > RENDERED_KEPT:
                    rendered.popitem(last=False)
        return page("run.html", title=f"{record.family} · {record.run_id}", body=body,
                    records=[record])

    def compare_page(request: Request) -> HTMLResponse:
        from ragmeter.reports.html import render_comparison

        ids = list(dict.fromkeys(request.query_params.getlist("run")))
        if len(ids) < 2:
            return error("Pick two or more runs to compare (tick them in the run list).")
        if len(ids) > MAX_COMPARE:
            return error(f"Compare at most {MAX_COMPARE} runs at once.")
        try:
            records = [load(i) for i in ids]
        except UserError as err:
            return error(str(err), 404)
        by_family: dict[str, list[Any]] = {}
        for r in records:
            by_family.setdefault(r.family, []).append(r)
        parts, singles = [], []
        for fam, group in by_family.items():
            if len(group) > 1:
                parts.append(f"<h2>{_escape(fam)}</h2>{render_comparison(group, 1)}")
            else:
                singles.append(group[0])
        return page("run.html", title=f"comparison of {len(records)} runs",
                    body=_safe("".join(parts)), records=records, singles=singles)

    # ------------------------------------------------------------------ launch

    def launch_page(request: Request) -> HTMLResponse:
        try:
            spec = spec_of(request.path_params.get("verb", "rgb-run"))
        except UserError as err:
            return error(str(err), 404)
        return page("launch.html", title=f"launch {spec.title}", spec=spec,
                    form=form_defaults(spec), **_launch_context(settings, spec, models))

    async def launch_estimate(request: Request) -> Response:
        form: dict[str, str] = {}
        try:
            spec = spec_of(request.path_params["verb"])
        except UserError as err:
            return error(str(err), 404)
        context = {"title": f"launch {spec.title}", "spec": spec,
                   **_launch_context(settings, spec, models)}
        try:
            form = await form_of(request)
            launch = validate(spec, form, settings.data_dirs, models)
            found = await run_in_threadpool(estimate, launch, settings.store_path)
        except PermissionError as err:
            return error(str(err), 403)
        except UserError as err:
            return page("launch.html", status=400, message=str(err),
                        form=form_echo(spec, form), **context)
        return page("launch.html", form=form_echo(spec, form), estimate=found,
                    command=" ".join(launch.command()), **context)

    async def launch_start(request: Request) -> Response:
        try:
            spec = spec_of(request.path_params["verb"])
            form = await form_of(request)
            launch = validate(spec, form, settings.data_dirs, models)
            job = jobs.start(launch)
        except PermissionError as err:
            return error(str(err), 403)
        except UserError as err:
            return error(str(err))
        return RedirectResponse(f"/jobs/{job.id}", status_code=303)

    def jobs_page(request: Request) -> HTMLResponse:
        listed = sorted(jobs.jobs.values(), key=lambda j: j.queued_at, reverse=True)
        return page("jobs.html", title="jobs", jobs=listed, max_jobs=jobs.max_jobs,
                    position=jobs.position)

    def job_page(request: Request) -> HTMLResponse:
        job = jobs.jobs.get(request.path_params["job_id"])
        if job is None:
            return error("No such job (jobs live as long as the server).", 404)
        return page("job.html", title=f"{job.title} · job {job.id}", job=job,
                    state=job.snapshot(), position=jobs.position(job),
                    command=" ".join(job.launch.command()))

    async def job_action(request: Request) -> Response:
        job_id, action = request.path_params["job_id"], request.path_params["action"]
        try:
            form = await form_of(request)
        except PermissionError as err:
            return error(str(err), 403)
        except UserError as err:
            return error(str(err))
        job = jobs.jobs.get(job_id)
        if job is None:
            return error("No such job.", 404)
        back = "/jobs" if form.get("back") == "list" else f"/jobs/{job_id}"
        if action == "cancel":
            jobs.cancel(job_id)
            return RedirectResponse(back, status_code=303)
        if action == "resume":
            if job.status not in ("cancelled", "failed"):
                return error("Only a cancelled or failed job can be resumed.")
            new = jobs.start(job.launch)
            return RedirectResponse(f"/jobs/{new.id}", status_code=303)
        return error("Unknown action.", 404)

    async def jobs_events(request: Request) -> Response:
        return _event_stream(lambda: jobs.version, lambda: {
            "jobs": [dict(j.snapshot(), position=jobs.position(j))
                     for j in list(jobs.jobs.values())], **jobs.counts()}, every=0.3)

    async def job_events(request: Request) -> Response:
        job = jobs.jobs.get(request.path_params["job_id"])
        if job is None:
            return Response("no such job", status_code=404)
        return _event_stream(lambda: job.version, lambda: {**job.snapshot(), **jobs.counts()},
                             ended=lambda: job.status in FINISHED)

    def static(request: Request) -> Response:
        from ragmeter.reports.html import REPORT_CSS

        name = request.path_params["name"]
        if name == "view.css":
            css = REPORT_CSS + (_HERE / "static" / "view.css").read_text(encoding="utf-8")
            return Response(css, media_type="text/css")
        if name == "view.js":
            return Response((_HERE / "static" / "view.js").read_text(encoding="utf-8"),
                            media_type="text/javascript")
        return Response("not found", status_code=404)

    routes = [
        Route("/", runs_page), Route("/runs/{run_id}", run_page), Route("/compare", compare_page),
        Route("/launch", launch_page), Route("/launch/{verb}", launch_page),
        Route("/launch/{verb}/estimate", launch_estimate, methods=["POST"]),
        Route("/launch/{verb}/start", launch_start, methods=["POST"]),
        Route("/jobs", jobs_page), Route("/jobs/events", jobs_events),
        Route("/jobs/{job_id}", job_page), Route("/jobs/{job_id}/events", job_events),
        Route("/jobs/{job_id}/{action}", job_action, methods=["POST"]),
        Route("/static/{name}", static),
    ]
    app = Starlette(routes=routes)
    app.state.jobs = jobs
    app.state.index = index
    return SecurityMiddleware(app, sec)


def _event_stream(version: Callable[[], int], payload: Callable[[], Any], *,
                  ended: Callable[[], bool] = lambda: False, every: float = 0.2) -> Any:
    """Server-sent events: ``payload()`` as JSON whenever ``version()`` changes, a keep-alive
    comment every 15 s, and an ``end`` event once ``ended()``."""
    from starlette.responses import StreamingResponse

    async def stream() -> AsyncIterator[str]:
        seen, idle = -1, 0.0
        while True:
            if version() != seen:
                seen = version()
                yield f"data: {json.dumps(payload())}\n\n"
                idle = 0.0
                if ended():
                    yield "event: end\ndata: {}\n\n"
                    return
            elif idle > 15:
                yield ": keep-alive\n\n"
                idle = 0.0
            await asyncio.sleep(every)
            idle += every

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"X-Accel-Buffering": "no"})


def _escape(text: str) -> str:
    from ragmeter.reports._html import esc

    return esc(text)


def _launch_context(settings: ViewSettings, spec: VerbSpec, models: EndpointModels
                    ) -> dict[str, Any]:
    files = {f.name: file_options(f, settings.data_dirs) for f in spec.all_fields()
             if f.kind == "file"}
    groups = models.groups() if spec.uses_backend else []
    return {"backends": backend_choices(), "files": files, "model_groups": groups}
