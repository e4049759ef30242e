"""ragmeter's per-user data folder, in a module light enough for any command to import."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["data_home"]


def data_home() -> Path:
    """ragmeter's per-user data folder (``RAGMETER_HOME`` overrides it)."""
    env = os.environ.get("RAGMETER_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("ragmeter", appauthor=False))
