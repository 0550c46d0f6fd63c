"""`make console-deploy`: the operator console's files to its bucket, then a CloudFront
invalidation (docs/deploy.md, "Operator console").

What goes up, and nothing else:

- `console/`: the page (index.html and its scripts and styles), at the bucket's root;
- `clients/js/dist/*.js`: the JS client the page imports as `./client/leaderboard.js`, under
  `client/`;
- `config.json`, written here from the stack: the API's URL, the sign-in URL
  (`ConsoleSignInUrl`) and the live updates' endpoint, as a subscriber needs it.

Only files of the types a static page serves are taken (a README or a stray `.env` in those
folders stays behind), never a dotfile, never a link that leads out of its folder. Every object
gets its content type and `Cache-Control: no-cache`; what the bucket holds beyond that set is
deleted (the bucket is the console's alone). The AWS CLI is not needed: boto3 does it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError

ROOT = Path(__file__).resolve().parent.parent
CONSOLE_DIR = ROOT / "console"
CLIENT_DIR = ROOT / "clients" / "js" / "dist"
CLIENT_PREFIX = "client/"
CONFIG_KEY = "config.json"
ENTRY_KEY = "index.html"
CACHE_CONTROL = "no-cache"  # revalidated on every load: a new deploy is seen at once

# What the console may serve: its CSP (template.yaml, ConsoleHeadersPolicy) lets it load its
# own scripts, styles and images, and nothing else (no fonts, no frames).
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".webp": "image/webp",
}
CLIENT_SUFFIXES = frozenset({".js"})  # the built modules, not their .d.ts

# The stack's outputs this needs, and the parameters it reads.
REQUIRED_OUTPUTS = (
    "ApiUrl",
    "ConsoleBucketName",
    "ConsoleDistributionId",
    "ConsoleUrl",
    "LiveRealtimeUrl",
    "LiveHttpUrl",
    "LiveApiKey",
    "LiveNamespace",
)


class ConsoleDeployError(Exception):
    """Something to fix before the console can be deployed (the message says what)."""


@dataclass(frozen=True)
class Upload:
    key: str
    body: bytes
    content_type: str


@dataclass(frozen=True)
class Stack:
    name: str
    outputs: dict[str, str]
    parameters: dict[str, str]


@dataclass(frozen=True)
class Report:
    bucket: str
    uploaded: tuple[str, ...]
    deleted: tuple[str, ...]
    skipped: tuple[str, ...]
    invalidation: str | None
    url: str


def stack_name(config_env: str = "default", samconfig: Path = ROOT / "samconfig.toml") -> str:
    """The stack `sam deploy --config-env <config_env>` deploys, from samconfig.toml."""
    settings = tomllib.loads(samconfig.read_text())
    env = settings.get(config_env, {})
    for command in ("global", "deploy"):
        name = env.get(command, {}).get("parameters", {}).get("stack_name")
        if name:
            return str(name)
    raise ConsoleDeployError(f"samconfig.toml names no stack_name for config env {config_env!r}")


def describe(cloudformation: Any, name: str) -> Stack:
    """The stack's outputs and parameters; an error naming what is missing."""
    try:
        (found,) = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except (ClientError, BotoCoreError) as error:  # no such stack, no credentials, no network
        raise ConsoleDeployError(f"cannot read stack {name!r}: {error}") from error
    outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in found.get("Outputs", [])}
    parameters = {
        p["ParameterKey"]: p.get("ParameterValue", "") for p in found.get("Parameters", [])
    }
    missing = [key for key in REQUIRED_OUTPUTS if not outputs.get(key)]
    if missing:
        raise ConsoleDeployError(
            f"stack {name!r} has no output {', '.join(missing)}: deploy the current "
            "template.yaml first (make build, sam deploy)"
        )
    return Stack(name=name, outputs=outputs, parameters=parameters)


def console_config(stack: Stack) -> dict[str, Any]:
    """config.json: what the console reads at start. `live` has the local stack's shape
    (devstack's live_config): a subscriber's WebSocket URL, the host that goes in its
    authorization, the API key, the boards' namespace and the publish rate."""
    outputs, parameters = stack.outputs, stack.parameters
    live: dict[str, str] = {
        "realtime_url": outputs["LiveRealtimeUrl"],
        "http_host": urlsplit(outputs["LiveHttpUrl"]).netloc,
        "api_key": outputs["LiveApiKey"],
        "namespace": outputs["LiveNamespace"],
    }
    if parameters.get("LivePublishRate"):
        live["publish_rate"] = parameters["LivePublishRate"]
    return {
        "api_url": outputs["ApiUrl"],
        "sign_in_url": parameters.get("ConsoleSignInUrl") or None,
        "live": live,
    }


def _files(folder: Path, suffixes: Iterable[str]) -> tuple[list[tuple[str, Path]], list[str]]:
    """(relative key, file) of every file to serve under `folder`, and the paths passed over.
    Dotfiles and dot-folders are never taken, nor a link that resolves outside the folder."""
    base = folder.resolve()
    allowed = set(suffixes)
    taken: list[tuple[str, Path]] = []
    skipped: list[str] = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts) or not path.is_file():
            continue
        shown = f"{folder.name}/{relative.as_posix()}"
        if not path.resolve().is_relative_to(base) or path.suffix.lower() not in allowed:
            skipped.append(shown)
            continue
        taken.append((relative.as_posix(), path))
    return taken, skipped


def planned_uploads(
    config: dict[str, Any], console_dir: Path | None = None, client_dir: Path | None = None
) -> tuple[list[Upload], list[str]]:
    """Every object of the console, in upload order (the client, the page's assets, its
    config, and index.html last, so that no one loads a new page with old modules), and what
    was passed over."""
    console_dir = console_dir or CONSOLE_DIR
    client_dir = client_dir or CLIENT_DIR
    if not (console_dir / ENTRY_KEY).is_file():
        raise ConsoleDeployError(f"{console_dir} has no {ENTRY_KEY}: nothing to deploy")
    if not (client_dir / "leaderboard.js").is_file():
        raise ConsoleDeployError(f"{client_dir} has no leaderboard.js: run make js-client")
    client, client_skipped = _files(client_dir, CLIENT_SUFFIXES)
    page, skipped = _files(console_dir, CONTENT_TYPES)
    skipped += [s for s in client_skipped if not s.endswith(".d.ts")]  # types, not served
    uploads = [
        Upload(CLIENT_PREFIX + key, path.read_bytes(), CONTENT_TYPES[path.suffix.lower()])
        for key, path in client
    ]
    for key, path in page:
        if key == CONFIG_KEY:  # a local one is not this deployment's
            skipped.append(f"{console_dir.name}/{key} (written from the stack instead)")
            continue
        if key.startswith(CLIENT_PREFIX):
            raise ConsoleDeployError(f"{console_dir.name}/{key} would hide the built client")
        if key != ENTRY_KEY:
            uploads.append(Upload(key, path.read_bytes(), CONTENT_TYPES[path.suffix.lower()]))
    body = (json.dumps(config, indent=2) + "\n").encode()
    uploads.append(Upload(CONFIG_KEY, body, CONTENT_TYPES[".json"]))
    entry = console_dir / ENTRY_KEY
    uploads.append(Upload(ENTRY_KEY, entry.read_bytes(), CONTENT_TYPES[".html"]))
    return uploads, skipped


def _existing_keys(s3: Any, bucket: str) -> set[str]:
    keys: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys.update(item["Key"] for item in page.get("Contents", []))
    return keys


def deploy(
    cloudformation: Any,
    s3: Any,
    cloudfront: Any,
    name: str,
    console_dir: Path | None = None,
    client_dir: Path | None = None,
    dry_run: bool = False,
) -> Report:
    """Upload the console to the stack's bucket, delete what is no longer part of it, and
    invalidate the distribution's cache."""
    stack = describe(cloudformation, name)
    bucket = stack.outputs["ConsoleBucketName"]
    uploads, skipped = planned_uploads(console_config(stack), console_dir, client_dir)
    keys = {u.key for u in uploads}
    stale = sorted(_existing_keys(s3, bucket) - keys) if not dry_run else []
    invalidation = None
    if not dry_run:
        for upload in uploads:
            s3.put_object(
                Bucket=bucket,
                Key=upload.key,
                Body=upload.body,
                ContentType=upload.content_type,
                CacheControl=CACHE_CONTROL,
            )
        for start in range(0, len(stale), 1000):  # DeleteObjects takes 1000 keys at most
            chunk = [{"Key": key} for key in stale[start : start + 1000]]
            s3.delete_objects(Bucket=bucket, Delete={"Objects": chunk, "Quiet": True})
        answer = cloudfront.create_invalidation(
            DistributionId=stack.outputs["ConsoleDistributionId"],
            InvalidationBatch={
                "Paths": {"Quantity": 1, "Items": ["/*"]},
                "CallerReference": f"console-deploy-{uuid.uuid4()}",
            },
        )
        invalidation = str(answer["Invalidation"]["Id"])
    return Report(
        bucket=bucket,
        uploaded=tuple(u.key for u in uploads),
        deleted=tuple(stale),
        skipped=tuple(skipped),
        invalidation=invalidation,
        url=stack.outputs["ConsoleUrl"],
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m deploy.console",
        description="Upload the operator console to its bucket and invalidate its distribution.",
    )
    parser.add_argument("--stack", help="stack name (default: samconfig.toml's for --config-env)")
    parser.add_argument("--config-env", default="default", help="samconfig.toml config env")
    parser.add_argument("--region", help="AWS region (default: the AWS configuration's)")
    parser.add_argument(
        "--dry-run", action="store_true", help="show what would go up; change nothing"
    )
    args = parser.parse_args(argv)
    import boto3  # here, so that --help works without the SDK's import time

    try:
        name = args.stack or stack_name(args.config_env)
        session = boto3.session.Session(region_name=args.region)
        if session.region_name is None:
            raise ConsoleDeployError("no AWS region: set AWS_REGION or pass --region")
        report = deploy(
            session.client("cloudformation"),
            session.client("s3"),
            session.client("cloudfront"),
            name,
            dry_run=args.dry_run,
        )
    except ConsoleDeployError as error:
        print(f"console-deploy: {error}", file=sys.stderr)
        return 1
    verb = "would upload" if args.dry_run else "uploaded"
    print(f"{verb} {len(report.uploaded)} files to s3://{report.bucket}/:")
    for key in report.uploaded:
        print(f"  {key}")
    for key in report.deleted:
        print(f"  deleted {key} (no longer part of the console)")
    for path in report.skipped:
        print(f"  left out {path}")
    if report.invalidation:
        print(f"invalidation {report.invalidation}: the new console is served within minutes")
    print(f"console: {report.url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
