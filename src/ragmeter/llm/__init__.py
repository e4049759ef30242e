"""Model backends.  A backend does I/O only: ``await backend.complete(request)``.

Cache, retries, rate limits and progress wrap backends in :mod:`ragmeter.runner`.
"""

from ragmeter.llm.base import Backend, Message, Request, Response, Usage

__all__ = ["Backend", "Message", "Request", "Response", "Usage"]
