"""Named OpenAI-compatible endpoints from a config file under ``$RAGMETER_HOME``.

The file is ``endpoints.toml`` (or ``endpoints.yaml``/``endpoints.yml``) in
:func:`ragmeter._util.data_home`, one table per endpoint::

    [endpoints.vllm-llama]
    base_url = "http://127.0.0.1:8000/v1"
    model = "meta-llama/Llama-3.1-8B-Instruct"
    api_key_env = "VLLM_KEY"          # optional: the NAME of the variable holding the key

The CLI takes ``--endpoint NAME`` (``ragmeter rgb run --endpoint vllm-llama``) and the web app
(``ragmeter view``) offers the names in its backend dropdown, and each endpoint's models
(:meth:`Endpoint.list_models`: its ``GET /models``) in its model dropdown.  Keys stay in environment
variables: the file names the variable, the key is read when the backend is created and never
written anywhere (the backend's identity, the store and the pages hold no key).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.errors import ConfigError, UnknownNameError

__all__ = ["Endpoint", "endpoints_file", "load_endpoints", "get_endpoint", "ENDPOINT_BACKEND",
           "MODELS_TIMEOUT_S", "MAX_LISTED_MODELS"]

# The backend every endpoint of the file is called through (ragmeter.backends.endpoint).
ENDPOINT_BACKEND = "openai"

COMPONENT = "endpoints"
_FILES = ("endpoints.toml", "endpoints.yaml", "endpoints.yml")
_FIELDS = ("base_url", "model", "api_key_env")
MODELS_TIMEOUT_S = 2.0  # a model list is a convenience: a slow server is not waited for
MAX_LISTED_MODELS = 500
_MAX_MODELS_BYTES = 2 * 2 ** 20
_MAX_MODEL_ID = 200


@dataclass(frozen=True)
class Endpoint:
    """One named OpenAI-compatible endpoint (no key: only the variable's name)."""

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None

    def api_key(self) -> str | None:
        """The key from the environment variable ``api_key_env`` (None when unset)."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def list_models(self, timeout_s: float = MODELS_TIMEOUT_S) -> tuple[list[str], str | None]:
        """The model ids the endpoint lists (``GET {base_url}/models``, OpenAI's list-models
        reply ``{"data": [{"id": ...}]}``), and None; or no ids and why, in one line without
        any secret.  At most :data:`MAX_LISTED_MODELS` ids of printable text; the key goes in
        the ``Authorization`` header only (``api_key_env``, else ``RAGMETER_API_KEY`` or
        ``OPENAI_API_KEY``, as the backend reads it)."""
        import json

        import httpx

        key = self.api_key() or os.environ.get("RAGMETER_API_KEY") \
            or os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        try:
            with httpx.stream("GET", self.base_url.rstrip("/") + "/models", headers=headers,
                              timeout=timeout_s, follow_redirects=False) as reply:
                if reply.status_code != 200:
                    return [], f"the server answered HTTP {reply.status_code}"
                body = b""
                for chunk in reply.iter_bytes():
                    body += chunk
                    if len(body) > _MAX_MODELS_BYTES:
                        return [], "the model list is larger than 2 MiB"
            data = json.loads(body).get("data")
        except httpx.HTTPError as err:
            return [], f"not reachable ({type(err).__name__})"  # no URL: no secret
        except (ValueError, AttributeError):
            return [], "the reply is not an OpenAI model list"
        if not isinstance(data, list):
            return [], "the reply is not an OpenAI model list"
        ids: list[str] = [d["id"] for d in data if isinstance(d, Mapping)
                          and isinstance(d.get("id"), str) and 0 < len(d["id"]) <= _MAX_MODEL_ID
                          and d["id"].isprintable()]
        return list(dict.fromkeys(ids))[:MAX_LISTED_MODELS], None

    def backend_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``create_backend`` for this endpoint (the key included)."""
        out: dict[str, Any] = {"model": self.model, "base_url": self.base_url}
        key = self.api_key()
        if key:
            out["api_key"] = key
        return out


def endpoints_file(home: Path | None = None) -> Path | None:
    """The endpoints file in ``home`` (default: the data folder), or None when there is none."""
    if home is None:
        from ragmeter._util._home import data_home

        home = data_home()
    for name in _FILES:
        if (home / name).is_file():
            return home / name
    return None


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{COMPONENT}: {path} cannot be read ({err}).") from None
    if path.suffix == ".toml":
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"{COMPONENT}: {path} is not valid TOML ({err}). Fix: see "
                              "docs/view.md for the layout.") from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{COMPONENT}: {path} is not valid YAML ({err}). Fix: see "
                          "docs/view.md for the layout.") from None


def load_endpoints(home: Path | None = None) -> dict[str, Endpoint]:
    """Every endpoint named in the endpoints file (empty when there is no file)."""
    path = endpoints_file(home)
    if path is None:
        return {}
    doc = _read(path)
    table = doc.get("endpoints") if isinstance(doc, Mapping) else None
    if not isinstance(table, Mapping):
        raise ConfigError(f"{COMPONENT}: {path} has no 'endpoints' table. Fix: write "
                          "[endpoints.NAME] tables with base_url and model.")
    out: dict[str, Endpoint] = {}
    for name, entry in table.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{COMPONENT}: {path}: endpoints.{name} is not a table. Fix: give "
                              "it base_url and model.")
        for required in ("base_url", "model"):
            value = entry.get(required)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{COMPONENT}: {path}: endpoints.{name} needs field "
                                  f"{required!r} (a non-empty string).")
        unknown = sorted(set(entry) - set(_FIELDS))
        if unknown:
            raise ConfigError(f"{COMPONENT}: {path}: endpoints.{name} has unknown field(s) "
                              f"{', '.join(unknown)}. Fix: use only {', '.join(_FIELDS)} (the "
                              "key itself goes in the environment variable api_key_env names).")
        env = entry.get("api_key_env")
        if env is not None and not isinstance(env, str):
            raise ConfigError(f"{COMPONENT}: {path}: endpoints.{name}.api_key_env must be the "
                              "name of an environment variable.")
        out[str(name)] = Endpoint(name=str(name), base_url=entry["base_url"].strip(),
                                  model=entry["model"].strip(), api_key_env=env)
    return out


def get_endpoint(name: str, home: Path | None = None) -> Endpoint:
    """One endpoint by name; UnknownNameError (with did-you-mean) otherwise."""
    found = load_endpoints(home)
    if name not in found:
        if not found:
            where = endpoints_file(home) or "endpoints.toml in $RAGMETER_HOME"
            raise ConfigError(f"{COMPONENT}: --endpoint {name!r} was given but no endpoints are "
                              f"configured ({where}). Fix: see docs/view.md.")
        raise UnknownNameError("endpoint", name, found, component=COMPONENT)
    return found[name]
