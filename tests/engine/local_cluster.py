"""A real two-node Ray cluster on 127.0.0.1 for the engine tests (one CPU per node), with the
loopback settings of ../shared/RAY.md set for the tests only (not product settings)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = Path(__import__("ragmeter").__file__).resolve().parents[1]


@contextmanager
def loopback_cluster(**env: str) -> Iterator[Any]:
    """A head node and one worker node, this process connected; ``env`` is set for the
    cluster's processes (with PYTHONPATH pointing at this checkout)."""
    import ray
    from ray.cluster_utils import Cluster

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # stay on loopback (RAY.md)
        from ray._private import ray_constants  # read at import: this process needs it too

        mp.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        mp.setenv("PYTHONPATH", os.pathsep.join([str(SRC), str(REPO)]))
        for name, value in env.items():
            mp.setenv(name, value)
        c = Cluster(initialize_head=True,
                    head_node_args={"num_cpus": 1, "include_dashboard": False})
        c.add_node(num_cpus=1)
        assert c.address.startswith("127.0.0.1:"), c.address
        ray.init(address=c.address)
        try:
            yield c
        finally:
            ray.shutdown()
            c.shutdown()
