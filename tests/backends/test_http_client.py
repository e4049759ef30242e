"""The pooled HTTP client (backends/_http.LoopClient): plain http:// goes through the wire
client and loads no certificates, https:// keeps httpx's certificate verification, httpx's own
CLI is not imported (issue 26.5: start-up)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import subprocess
import sys

import httpx

from ragmeter.backends._http import LoopClient


def _https_context() -> tuple[ssl.SSLContext, bool, bool]:
    """The TLS context of the client an https:// request gets, whether it existed before that
    request, and whether a plain http:// request made it."""
    async def main() -> tuple[ssl.SSLContext, bool, bool]:
        pool = LoopClient(headers={}, timeout_s=5, max_connections=2,
                          base_url="http://127.0.0.1:9/v1")
        client = pool.get()
        with contextlib.suppress(Exception):  # nothing listens on port 9
            await client.request("GET", "/x")
        made_by_http = client._httpx is not None
        with contextlib.suppress(Exception):  # port 9 refuses before any TLS handshake
            await client.request("GET", "https://127.0.0.1:9/v1/x")
        made = client._httpx
        await pool.close()
        return made._transport._pool._ssl_context, made_by_http, isinstance(made, httpx.AsyncClient)
    return asyncio.run(main())


def test_https_verifies_certificates_and_is_made_on_first_use() -> None:
    tls, made_by_http, is_httpx = _https_context()
    assert not made_by_http and is_httpx
    assert tls.verify_mode == ssl.CERT_REQUIRED and tls.check_hostname


def test_a_plain_http_client_loads_no_certificate_bundle() -> None:
    code = ("import asyncio, ssl\n"
            "loads = []\n"
            "orig = ssl.SSLContext.load_verify_locations\n"
            "ssl.SSLContext.load_verify_locations = lambda self, *a, **k: loads.append(a)\n"
            "from ragmeter.backends._http import LoopClient\n"
            "async def main():\n"
            "    pool = LoopClient(headers={}, timeout_s=5, max_connections=2,\n"
            "                      base_url='http://127.0.0.1:9/v1')\n"
            "    pool.get()\n"
            "    await pool.close()\n"
            "asyncio.run(main())\n"
            "import sys\n"
            "print(len(loads), 'httpx._main' in sys.modules, 'rich' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    # no certificate bundle loaded; httpx's own command-line client (rich, pygments) not imported
    assert done.stdout.split() == ["0", "False", "False"]


def test_import_httpx_is_the_whole_httpx_module() -> None:
    code = ("from ragmeter.backends._http import import_httpx\n"
            "httpx = import_httpx()\n"
            "import sys\n"
            "assert 'httpx._main' not in sys.modules\n"
            "import httpx._main\n"  # still importable afterwards
            "print(httpx.AsyncClient.__name__, import_httpx() is httpx)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["AsyncClient", "True"]
