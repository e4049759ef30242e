"""A driver process for the Ray tests: ``python -m tests.engine.ray_driver ADDRESS URL STORE N``
runs N requests through the runner with ``--engine ray`` on the cluster at ADDRESS against the
scripted server at URL, storing into STORE, then prints ``done``.  The driver-kill test
SIGKILLs it mid-run and runs the same requests again in-process."""

from __future__ import annotations

import sys
from typing import Any

from ragmeter.backends._registry import backend_recipe
from ragmeter.backends._types import BaseBackend, Request
from ragmeter.runner._run import RunnerConfig, run_requests
from ragmeter.runner._store import Store
from ragmeter.runner.engines import RayOptions, make_engine


def requests(n: int) -> list[Request]:
    """``n`` distinct requests, some with choices to score (logprobs), some plain text."""
    return [Request.chat(f"q{i}", [{"role": "user", "content": f"question {i}"}],
                         params={"temperature": 0},
                         choices=("yes", "no", "maybe") if i % 3 == 0 else None)
            for i in range(n)]


class ThreadsProbe(BaseBackend):
    """A backend that answers with the threads it was built with and the thread settings of
    its process (OMP_NUM_THREADS, the BLAS pools threadpoolctl sees): the Ray thread test."""

    name = "threads-probe"

    def __init__(self, model: str | None = None, threads: int | None = None) -> None:
        self.threads = threads

    def identity(self) -> dict[str, str]:
        return {"backend": self.name, "model": "probe"}

    async def complete(self, request: Request) -> Any:
        import os

        from ragmeter.backends._types import Response, Usage

        try:
            from threadpoolctl import threadpool_info

            blas = sorted({int(p["num_threads"]) for p in threadpool_info()})
        except ImportError:
            blas = []
        text = (f"threads={self.threads} omp={os.environ.get('OMP_NUM_THREADS')} "
                f"blas={blas}")
        return Response(text=text, usage=Usage(1, 1), finish_reason="stop")

    async def aclose(self) -> None:
        return None


def main(argv: list[str]) -> None:
    address, url, store_path, n = argv[0], argv[1], argv[2], int(argv[3])
    recipe = backend_recipe("openai", model="scripted", base_url=url)
    engine = make_engine("ray", recipe, RayOptions(address=address, workers=2, batch_size=2))
    run_requests(requests(n), recipe.build(), Store(store_path),
                 RunnerConfig(progress=False, engine=engine, backoff_base_s=0.01))
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
