"""The package version: the one place it is written (pyproject.toml reads it from here), so
``import ragmeter`` needs no ``importlib.metadata`` lookup."""

__version__ = "0.1.0"
