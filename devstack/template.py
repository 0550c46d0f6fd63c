"""Read template.yaml: the functions, their environment and their HTTP API routes.

The local stack routes requests from this, so there is no second route table to keep in sync.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"


class _CfnLoader(yaml.SafeLoader):
    """SafeLoader that keeps CloudFormation short-form tags (!Ref, !GetAtt...) as dicts."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _tag)


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: str
    authorizer: str | None
    scopes: tuple[str, ...]
    pattern: re.Pattern[str] = field(compare=False)

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if method != self.method and self.method != "ANY":
            return None
        found = self.pattern.fullmatch(path)
        return None if found is None else found.groupdict()


# What the local stack sets on every function besides the template's own variables.
LOCAL_ONLY_VARIABLES = (
    "DATABASE_URL",
    "SQS_ENDPOINT_URL",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "POWERTOOLS_TRACE_DISABLED",
    "POWERTOOLS_DEV",
    "POWERTOOLS_METRICS_DISABLED",
    # Validation hooks a board may name locally: Python callables (devstack/hooks.py).
    "LOCAL_VALIDATION_HOOKS",
    # How soon a failed webhook delivery is tried again (10 s by default; less to try retries).
    "WEBHOOK_RETRY_BASE_SECONDS",
)


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    code_dir: Path
    handler: str
    timeout: int
    environment: dict[str, Any]
    layers: tuple[str, ...]
    events: dict[str, dict[str, Any]]

    def resolved_environment(self, local: dict[str, str]) -> dict[str, str]:
        """Literal values from the template; references replaced by the local stack's values.
        A variable the template declares empty (JWT_SECRET) is a slot for the local stack:
        declared so that `sam local invoke --env-vars` may set it, it takes the local value."""
        env: dict[str, str] = {}
        for key, value in self.environment.items():
            if isinstance(value, str) and not (value == "" and key in local):
                env[key] = value
            elif key in local:
                env[key] = local[key]
        # The local stack hands over a full DATABASE_URL instead of a host and a secret.
        for key in LOCAL_ONLY_VARIABLES:
            if key in local:
                env[key] = local[key]
        return env


@dataclass(frozen=True)
class Template:
    functions: dict[str, FunctionSpec]
    routes: tuple[Route, ...]
    default_authorizer: str | None
    raw: dict[str, Any]

    def find_route(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The route for a request; literal segments win over parameters, as in API Gateway."""
        matches = [
            (r, params) for r in self.routes if (params := r.match(method, path)) is not None
        ]
        if not matches:
            return None
        return min(matches, key=lambda m: (len(m[1]), -len(m[0].path)))


def _path_pattern(path: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[A-Za-z0-9_]+\})", path)
    regex = "".join(f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") else re.escape(p) for p in parts)
    return re.compile(regex)


def load(path: Path = TEMPLATE) -> Template:
    raw = yaml.load(path.read_text(), Loader=_CfnLoader)  # noqa: S506  # SafeLoader subclass
    globals_fn = (raw.get("Globals") or {}).get("Function") or {}
    global_env = ((globals_fn.get("Environment") or {}).get("Variables")) or {}
    global_layers = [_ref(x) for x in globals_fn.get("Layers", [])]
    default_authorizer = None
    functions: dict[str, FunctionSpec] = {}
    routes: list[Route] = []
    for name, res in raw["Resources"].items():
        props = res.get("Properties") or {}
        if res["Type"] == "AWS::Serverless::HttpApi":
            default_authorizer = (props.get("Auth") or {}).get("DefaultAuthorizer")
        if res["Type"] != "AWS::Serverless::Function":
            continue
        env = dict(global_env)
        env.update(((props.get("Environment") or {}).get("Variables")) or {})
        functions[name] = FunctionSpec(
            name=name,
            code_dir=ROOT / props["CodeUri"],
            handler=props.get("Handler", globals_fn.get("Handler", "app.lambda_handler")),
            timeout=int(props.get("Timeout", globals_fn.get("Timeout", 3))),
            environment=env,
            layers=tuple(global_layers + [_ref(x) for x in props.get("Layers", [])]),
            events=props.get("Events") or {},
        )
    for name, fn in functions.items():
        for event in fn.events.values():
            if event.get("Type") != "HttpApi":
                continue
            props = event["Properties"]
            auth = props.get("Auth") or {}
            authorizer = auth.get("Authorizer", default_authorizer)
            routes.append(
                Route(
                    method=props["Method"].upper(),
                    path=props["Path"],
                    function=name,
                    authorizer=None if authorizer in (None, "NONE") else authorizer,
                    scopes=tuple(auth.get("AuthorizationScopes") or ()),
                    pattern=_path_pattern(props["Path"]),
                )
            )
    return Template(
        functions=functions, routes=tuple(routes), default_authorizer=default_authorizer, raw=raw
    )


def _ref(value: Any) -> str:
    return value["Ref"] if isinstance(value, dict) and "Ref" in value else str(value)


def default_data_dir() -> Path:
    """Where the local stack keeps its data and state (`LOCAL_DATA_DIR`, default `.local`)."""
    return Path(os.environ.get("LOCAL_DATA_DIR") or ROOT / ".local").resolve()
