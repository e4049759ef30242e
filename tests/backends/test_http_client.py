"""The pooled HTTP client (backends/_http.LoopClient): plain http:// loads no certificates,
https:// keeps httpx's certificate verification, httpx's own CLI is not imported (issue
26.5: start-up)."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import sys

import httpx

from ragmeter.backends._http import LoopClient


def _contexts() -> tuple[ssl.SSLContext | None, ssl.SSLContext, bool]:
    async def main() -> tuple[ssl.SSLContext | None, ssl.SSLContext, bool]:
        pool = LoopClient(headers={}, timeout_s=5, max_connections=2,
                          base_url="http://127.0.0.1:9/v1")
        client = pool.get()
        plain = client._transport_for_url(httpx.URL("http://127.0.0.1:9/v1/x"))
        lazy = client._transport_for_url(httpx.URL("https://example.org/v1/x"))
        made_before_https = lazy._transport is not None
        tls = lazy._get()
        await pool.close()
        return plain._pool._ssl_context, tls._pool._ssl_context, made_before_https
    return asyncio.run(main())


def test_https_verifies_certificates_and_is_made_on_first_use() -> None:
    plain, tls, made_before_https = _contexts()
    assert not made_before_https
    assert tls.verify_mode == ssl.CERT_REQUIRED and tls.check_hostname
    assert plain is None or plain.verify_mode == ssl.CERT_NONE  # http:// never uses it


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
