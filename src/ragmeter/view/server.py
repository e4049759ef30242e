"""Serving the app with uvicorn (the ``ragmeter view`` command's engine, and tests' server)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ragmeter.errors import MissingDependencyError

__all__ = ["serve", "require_view_extra", "ServerThread"]


def require_view_extra() -> None:
    """Raise MissingDependencyError naming the extra when starlette/uvicorn/jinja2 are absent."""
    import importlib.util

    missing = [m for m in ("starlette", "uvicorn", "jinja2")
               if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingDependencyError(", ".join(missing), "pip install 'ragmeter[view]'",
                                     "needed by ragmeter view")


def _server(settings: Any, on_ready: Callable[[int], None] | None,
            log_level: str) -> Any:
    require_view_extra()
    import uvicorn

    from ragmeter.view.app import create_app

    app = create_app(settings)
    sec = settings.security
    config = uvicorn.Config(app, host=sec.host, port=sec.port, log_level=log_level,
                            access_log=False, lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    original = server.startup

    async def startup(sockets: Any = None) -> None:
        await original(sockets=sockets)
        if server.servers and server.servers[0].sockets:
            sec.port = int(server.servers[0].sockets[0].getsockname()[1])  # port 0: the real one
        if on_ready is not None:
            on_ready(sec.port)

    server.startup = startup  # type: ignore[method-assign]
    return server


def serve(settings: Any, *, on_ready: Callable[[int], None] | None = None,
          log_level: str = "warning") -> None:
    """Serve ``create_app(settings)`` on its host and port until interrupted."""
    _server(settings, on_ready, log_level).run()


class ServerThread:
    """The app served from a background thread (tests, notebooks): ``url`` once started."""

    def __init__(self, settings: Any, log_level: str = "warning") -> None:
        self.settings = settings
        self._ready = threading.Event()
        self.server = _server(settings, lambda port: self._ready.set(), log_level)
        self.thread = threading.Thread(target=self.server.run, name="ragmeter-view",
                                       daemon=True)

    @property
    def url(self) -> str:
        sec = self.settings.security
        return f"http://{sec.host}:{sec.port}"

    def start(self, timeout: float = 20.0) -> ServerThread:
        self.thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("ragmeter view did not start in time")
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
