"""Holding responses to docs/openapi.json: find the operation by method and path template, the
response by status code, and validate headers and the JSON body against the document's schemas.

`InProcessApi.call` (tests/support/api.py) runs every response through `check_response`, so every
contract test is also a test of the document. Validators are compiled once per session.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry
from referencing.jsonschema import DRAFT202012

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
BASE = "urn:leaderboard:openapi"  # the document's URI in the registry, for its "#/..." refs
ROUTE_NOT_FOUND = "#/components/responses/RouteNotFound"
GATEWAY_PAGES = ("/", "/index.html", "/openapi.json")  # the local gateway's own, not operations


class ContractViolation(AssertionError):
    """A response the document does not describe."""


@functools.cache
def document() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DOCUMENT.read_text())
    return loaded


@functools.cache
def _registry() -> Registry:
    return Registry().with_resource(BASE, DRAFT202012.create_resource(document()))


def _pointer(*parts: str) -> str:
    """A URI fragment holding a JSON pointer (path templates' braces percent-encoded)."""
    escaped = (p.replace("~", "~0").replace("/", "~1") for p in parts)
    return "#/" + quote("/".join(escaped), safe="/~")


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    """Follow a local `$ref` (responses, headers, parameters) to what it names."""
    while "$ref" in node:
        resolved = _registry().resolver(BASE).lookup(BASE + node["$ref"]).contents
        assert isinstance(resolved, dict)
        node = resolved
    return node


@functools.cache
def validator(pointer: str) -> Draft202012Validator:
    """A compiled validator for the schema at `pointer` in the document."""
    return Draft202012Validator({"$ref": BASE + pointer}, registry=_registry())


def operation(path_template: str, method: str) -> dict[str, Any]:
    found: dict[str, Any] = document()["paths"][path_template][method.lower()]
    return found


def _response_pointer(path_template: str | None, method: str, status: int) -> str | None:
    """Where the document describes this response (None: the status is undocumented)."""
    if path_template is None:
        return ROUTE_NOT_FOUND if status == 404 else None
    responses = operation(path_template, method)["responses"]
    key = str(status) if str(status) in responses else f"{str(status)[0]}XX"
    if key not in responses:
        return None
    ref = responses[key].get("$ref")
    return ref or _pointer("paths", path_template, method.lower(), "responses", key)


def check_response(
    method: str,
    path_template: str | None,
    status: int,
    headers: dict[str, str],
    body: bytes,
) -> None:
    """Raise ContractViolation unless the document describes this response exactly.

    `path_template` is the template route the request matched (None: no route, the gateway's
    own 404). Headers are compared case-insensitively; the body is validated as JSON.
    """
    where = f"{method} {path_template or '(no route)'} -> {status}"
    pointer = _response_pointer(path_template, method, status)
    if pointer is None:
        raise ContractViolation(
            f"{where}: status {status} is not documented in docs/openapi.json; body: {body[:300]!r}"
        )
    response = resolve({"$ref": pointer})
    lower = {k.lower(): v for k, v in headers.items()}
    for name, spec in (response.get("headers") or {}).items():
        spec = resolve(spec)
        value = lower.get(name.lower())
        if value is None:
            if spec.get("required"):
                raise ContractViolation(f"{where}: the required header {name} is missing")
            continue
        schema = spec.get("schema") or {}
        typed: Any = value
        if schema.get("type") == "integer":
            try:
                typed = int(value)
            except ValueError:
                raise ContractViolation(
                    f"{where}: header {name}: {value!r} is no integer"
                ) from None
        errors = list(Draft202012Validator(schema).iter_errors(typed))
        if errors:
            raise ContractViolation(f"{where}: header {name}: {errors[0].message}")
    content = response.get("content")
    if not content:
        if body:
            raise ContractViolation(f"{where}: documented without a body, got {body[:300]!r}")
        return
    media = lower.get("content-type", "").split(";")[0].strip()
    if media not in content:
        raise ContractViolation(
            f"{where}: content-type {media!r}, documented: {', '.join(sorted(content))}"
        )
    try:
        parsed = json.loads(body)
    except ValueError:
        raise ContractViolation(f"{where}: the body is not JSON: {body[:300]!r}") from None
    error = best_match(
        validator(f"{pointer}/content/{media.replace('/', '~1')}/schema").iter_errors(parsed)
    )
    if error is not None:
        at = "/".join(str(p) for p in error.absolute_path) or "(the body)"
        raise ContractViolation(
            f"{where}: the body does not match docs/openapi.json at {at}: {error.message}\n"
            f"body: {json.dumps(parsed)[:1000]}"
        )


def check_reply(template: Any, method: str, target: str, reply: Any) -> None:
    """`check_response` for a local gateway reply to `method target` (devstack.gateway.LocalApi):
    the operation is the template route the gateway matched."""
    path = urlsplit(target).path
    if method == "GET" and path in GATEWAY_PAGES:
        return
    found = template.find_route(method, path)
    check_response(
        method, found[0].path if found else None, reply.status, reply.headers, reply.body
    )
