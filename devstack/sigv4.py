"""Checking an AWS Signature Version 4 as the local event API's IAM authorizer.

On AWS only the live publisher's role may publish to the event API: AppSync checks the SigV4
signature of every `POST /event`. The local stand-in checks it the same way, against the
credentials the local stack gives its functions, so a client that merely sends something shaped
like a signature is refused locally as it is on AWS. Only what a publish uses is covered: the
`Authorization` header form (not presigned query strings), any signed headers, the body's hash.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

ALGORITHM = "AWS4-HMAC-SHA256"
# AWS refuses a request signed more than five minutes before or after it arrives.
MAX_SKEW = timedelta(minutes=5)


class SignatureError(Exception):
    """Why a request's signature was refused (the message says; it never echoes a secret)."""


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _parse(header: str) -> dict[str, str]:
    if not header.startswith(ALGORITHM + " "):
        raise SignatureError(f"the Authorization header is not an {ALGORITHM} signature")
    fields = {}
    for part in header[len(ALGORITHM) + 1 :].split(","):
        name, _, value = part.strip().partition("=")
        fields[name] = value
    missing = {"Credential", "SignedHeaders", "Signature"} - fields.keys()
    if missing:
        raise SignatureError(f"the Authorization header lacks {', '.join(sorted(missing))}")
    return fields


def verify(
    *,
    method: str,
    target: str,
    headers: Mapping[str, str],
    body: bytes,
    access_key_id: str,
    secret_access_key: str,
    service: str,
    now: datetime | None = None,
) -> None:
    """Raise SignatureError unless `headers["authorization"]` signs this request with these
    credentials for `service`. Header names in `headers` are lower case."""
    fields = _parse(headers.get("authorization", ""))
    scope = fields["Credential"].split("/")
    if len(scope) != 5 or scope[4] != "aws4_request":
        raise SignatureError("the credential scope is malformed")
    key_id, day, region, scope_service, _ = scope
    if scope_service != service:
        raise SignatureError(f"the signature is for {scope_service!r}, not {service!r}")
    if not hmac.compare_digest(key_id.encode(), access_key_id.encode()):
        raise SignatureError("the security token included in the request is invalid")
    stamp = headers.get("x-amz-date", "")
    try:
        signed_at = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise SignatureError("X-Amz-Date is missing or malformed") from None
    if not stamp.startswith(day):
        raise SignatureError("the credential scope's date is not X-Amz-Date's")
    if abs((now or datetime.now(UTC)) - signed_at) > MAX_SKEW:
        raise SignatureError("signature expired: X-Amz-Date is more than 5 minutes off")
    signed = fields["SignedHeaders"].split(";")
    if "host" not in signed or any(name not in headers for name in signed):
        raise SignatureError("a signed header is missing from the request (host must be signed)")

    path, _, query = target.partition("?")
    canonical_query = "&".join(
        sorted(
            f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
            for k, _, v in (pair.partition("=") for pair in query.split("&") if pair)
        )
    )
    canonical = "\n".join(
        [
            method,
            quote(path, safe="/~") or "/",
            canonical_query,
            "".join(f"{name}:{' '.join(headers[name].split())}\n" for name in signed),
            ";".join(signed),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    to_sign = "\n".join(
        [ALGORITHM, stamp, "/".join(scope[1:]), hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = ("AWS4" + secret_access_key).encode()
    for part in (day, region, service, "aws4_request"):
        key = _hmac(key, part)
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, fields["Signature"]):
        raise SignatureError(
            "the request signature we calculated does not match the signature you provided"
        )
