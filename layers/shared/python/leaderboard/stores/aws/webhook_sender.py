"""The webhook's HTTP client: urllib (no dependency), redirects refused, one request a call."""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any


class TransportFailure(Exception):
    """No HTTP answer: a timeout, a refused or reset connection, a TLS or DNS failure."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx is the receiver's answer, not a place to send a signed body to."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class UrllibTransport:
    def __init__(self) -> None:
        self._opener = urllib.request.build_opener(_NoRedirect())

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> int:
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310 - http(s) only, checked at cold start
        try:
            with self._opener.open(request, timeout=timeout_s) as response:
                response.read(64 * 1024)  # the answer's body is not used; drain a little
                status: int = response.status
                return status
        except urllib.error.HTTPError as exc:
            exc.close()
            return exc.code
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise TransportFailure(str(reason) or type(reason).__name__) from exc
        except OSError as exc:  # e.g. a reset while reading the answer
            raise TransportFailure(str(exc) or type(exc).__name__) from exc
