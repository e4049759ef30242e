"""The demo from Python: ragmeter's main job on its built-in samples, ending with one HTML report.

::

    import ragmeter
    demo = ragmeter.demo("ragmeter-out")          # RGB through the offline model, ~minutes
    demo.rgb.summary["tables"], demo.multilingual.summary["metrics"], demo.report
    ragmeter.demo("ragmeter-out", model=False)    # the model-free samples only, seconds

``ragmeter demo`` calls exactly this function and prints what it returns.  The parts are the
public family functions with the demo's settings: :func:`ragmeter.rgb.run` on the built-in
RGB-format sample (greedy, answers capped at 32 tokens, noise 0/0.4/0.8 and 1.0, judged),
:func:`ragmeter.multilingual.score` on the multilingual sample (CIs, paired tests) and
:func:`ragmeter.reliability.score` on the annotator sample (QC ``qc_maria``).  Each part is
saved as a run record and the report is written from those records, as ``ragmeter report``
would write it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter._verb._context import async_variant
from ragmeter.result import Result
from ragmeter.rgb._demo import DEMO_BATCH_SIZE, DEMO_CONCURRENCY, DEMO_MAX_TOKENS, DEMO_NOISE_RATES

__all__ = ["DemoResult", "demo", "ademo", "require_local_model", "RGB_OPTIONS",
           "MULTILINGUAL_OPTIONS", "RELIABILITY_OPTIONS"]

# The demo's settings of each family function (documented in docs/python.md).
RGB_OPTIONS: dict[str, Any] = {"noise_rates": DEMO_NOISE_RATES, "temperature": 0.0,
                               "max_tokens": DEMO_MAX_TOKENS, "judge": True}
MULTILINGUAL_OPTIONS: dict[str, Any] = {"ci": True, "paired": True, "keep_text": True}
RELIABILITY_OPTIONS: dict[str, Any] = {"qc": ("qc_maria",)}
MULTILINGUAL_SAMPLE = "multilingual_answers.jsonl"
RELIABILITY_SAMPLE = "reliability_annotations.csv"


@dataclass
class DemoResult:
    """What :func:`demo` produced: one :class:`Result` per part, the files and the records.

    ``rgb`` is None with ``model=False``.  ``rgb_outputs``: the paths ``rgb run --out`` writes
    (``results``, ``items``, ``plot``) and its ``notes``; ``run_ids``: the run records, in the
    order of :attr:`results`; ``report``: the HTML report of those records.
    """

    multilingual: Result
    reliability: Result
    report: Path
    rgb: Result | None = None
    rgb_outputs: dict[str, Any] = field(default_factory=dict)
    rgb_wall_s: float | None = None
    run_ids: list[str] = field(default_factory=list)

    @property
    def results(self) -> list[Result]:
        """The parts' results in the demo's order (RGB first when it ran)."""
        return [r for r in (self.rgb, self.multilingual, self.reliability) if r is not None]

    @property
    def summaries(self) -> dict[str, dict[str, Any]]:
        """``{family: summary}`` of every part (what each part's ``--json`` would write)."""
        return {r.family: r.summary for r in self.results}

    def _repr_html_(self) -> str:
        import html

        parts = "".join(r._repr_html_() for r in self.results)
        return (f"{parts}<p>report: <code>{html.escape(str(self.report))}</code></p>")


def demo(out: str | Path = "ragmeter-out", *, model: bool = True, backend: Any = None,
         store: Any = None, progress: bool | None = None, runs_dir: str | Path | None = None,
         command: Sequence[str] | None = None) -> DemoResult:
    """Run the demo: RGB on the built-in sample through a model (``model=True``), the
    multilingual and annotator samples, one run record per part and ``out/report.html``.

    ``backend``: RGB's model, a :mod:`ragmeter.backends` value [default: the offline local
    model, in batches of ``DEMO_BATCH_SIZE`` grouped by prompt length].  ``store``: the store of model calls (a path or a
    :class:`ragmeter.runner._store.Store`) [default: the CLI's]; a second run is answered from it.
    ``runs_dir``: where the run records go [default: ``$RAGMETER_HOME/runs``].  ``command``:
    the command line the records name [default: ``python ragmeter.demo``].
    """
    import ragmeter.multilingual
    import ragmeter.reliability
    from ragmeter.io._samples import sample_path
    from ragmeter.reports.html import write_report

    out_dir = Path(out)
    cmd = list(command) if command is not None else ["python", "ragmeter.demo"]
    records_dir = None if runs_dir is None else str(runs_dir)
    records: list[Any] = []
    rgb: Result | None = None
    rgb_outputs: dict[str, Any] = {}
    rgb_wall: float | None = None
    if model:
        start = time.monotonic()
        if backend is None:
            backend = demo_backend()
        rgb, rgb_outputs = _rgb_part(out_dir / "rgb", backend, store, progress)
        rgb_wall = time.monotonic() - start
        records.append(rgb.save(records_dir, command=cmd))
    ml = ragmeter.multilingual.score(sample_path(MULTILINGUAL_SAMPLE), **MULTILINGUAL_OPTIONS)
    records.append(ml.save(records_dir, command=cmd))
    rel = ragmeter.reliability.score(sample_path(RELIABILITY_SAMPLE), **RELIABILITY_OPTIONS)
    records.append(rel.save(records_dir, command=cmd))
    report = write_report(records, out_dir / "report.html")
    return DemoResult(multilingual=ml, reliability=rel, report=report, rgb=rgb,
                      rgb_outputs=rgb_outputs, rgb_wall_s=rgb_wall,
                      run_ids=[str(r.run_id) for r in records])


def require_local_model() -> None:
    """Raise :class:`ragmeter.errors.MissingDependencyError` with the install command when the
    offline default model or its runtime is missing (before any work is done)."""
    from ragmeter.backends._local._backend import _choose_runtime
    from ragmeter.backends._local._model import resolve_model

    _choose_runtime("auto", resolve_model(None))


def demo_backend() -> Any:
    """The demo's model: the offline local one.  In a home without the block kernel's build
    or a converted model its load starts at once on its model thread, so that the build and
    the GGUF's conversion overlap the demo's imports and prompts; elsewhere it loads on the
    first call, as before (a demo answered from the store makes none, and a load beside it
    slowed it by about a second)."""
    from ragmeter.backends import local

    require_local_model()
    # batches of DEMO_BATCH_SIZE cut by prompt length from all DEMO_CONCURRENCY calls in
    # flight (greedy texts identical to one at a time: the demo test replays every answer
    # one call at a time)
    backend = local(concurrency=DEMO_CONCURRENCY, batch_size=DEMO_BATCH_SIZE)
    if _new_home():
        backend.instance().load_in_background()
    return backend


def _new_home() -> bool:
    """No kernel built and no model converted here yet (what the first load builds); a
    guess that only decides when the load starts, never what it does."""
    from ragmeter._util._cbuild import kernels_dir
    from ragmeter.backends._local._cache import models_dir

    return (not any(kernels_dir().glob("*.so"))
            or not any(p.is_dir() for p in models_dir().glob("*")))


def _rgb_part(out_dir: Path, backend: Any, store: Any, progress: bool | None
              ) -> tuple[Result, dict[str, Any]]:
    """:func:`ragmeter.rgb.run` on the built-in sample with the demo's settings, and the files
    ``rgb run --out`` writes."""
    import ragmeter.rgb
    from ragmeter.rgb._outputs import write_run_outputs

    result = ragmeter.rgb.run(None, backend=backend, store=store, progress=progress,
                              **RGB_OPTIONS)
    return result, write_run_outputs(result.detail, out_dir)


ademo = async_variant(demo)
