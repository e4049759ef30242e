"""``ragmeter view``: a local web app over the run records and the store (issue 17).

Lists every stored run with its headline numbers, opens one (the HTML report's own rendering),
compares several (the report's paired comparison), and launches the run verbs of every family
(one form per verb from :mod:`ragmeter.view.verbs`) with a dry-run estimate first and live
progress pushed over server-sent events, several jobs at once.  Starlette + uvicorn + Jinja2,
no Node build step, installed with ``pip install 'ragmeter[view]'``.  Binds to 127.0.0.1 by default; anything else
needs a token (see :mod:`ragmeter.view.security`).

    from ragmeter.view import ViewSettings, create_app, serve
"""

from __future__ import annotations

from typing import Any

__all__ = ["ViewSettings", "create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name in ("ViewSettings", "create_app"):
        from ragmeter.view import app

        return getattr(app, name)
    if name == "serve":
        from ragmeter.view.server import serve

        return serve
    raise AttributeError(name)
