"""Calling validation hooks: a Lambda function on AWS, a configured Python callable locally.

Either way one call per request, within the board's time budget; whatever goes wrong
(an error, a timeout, a Lambda FunctionError, a reply that is not the contract's JSON) is a
HookFailure, which the board's policy turns into an answer (leaderboard/domain/hooks.py).

Boards without a hook never reach this module's callers, and nothing here imports boto3 until
a board names a Lambda hook: the Lambda client is made then, once per execution environment
and time budget.
"""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from leaderboard.domain.hooks import (
    HookConfig,
    HookFailure,
    Screening,
    hook_request,
    parse_hook_answer,
    screenings,
)
from leaderboard.domain.submissions import Submission
from leaderboard.settings import HookSettings

LocalHook = Callable[[dict[str, Any]], Any]


class LambdaInvoker:
    """Synchronous Lambda invocations with a read timeout equal to the hook's budget."""

    def __init__(self, endpoint_url: str | None = None) -> None:
        self.endpoint_url = endpoint_url
        self._clients: dict[int, Any] = {}
        self._lock = threading.Lock()

    def _client(self, timeout_ms: int) -> Any:
        """One client per budget, made on first need: botocore timeouts are per client."""
        with self._lock:
            client = self._clients.get(timeout_ms)
            if client is None:
                import boto3
                from botocore.config import Config

                seconds = timeout_ms / 1000
                config = Config(
                    connect_timeout=seconds,
                    read_timeout=seconds,
                    # A retry would spend the budget again: a failure is the policy's to answer.
                    retries={"total_max_attempts": 1, "mode": "standard"},
                    tcp_keepalive=True,
                )
                client = boto3.client("lambda", endpoint_url=self.endpoint_url, config=config)
                self._clients[timeout_ms] = client
            return client

    def __call__(self, hook: HookConfig, request: dict[str, Any]) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            reply = self._client(hook.timeout_ms).invoke(
                FunctionName=hook.target,
                InvocationType="RequestResponse",
                Payload=json.dumps(request, separators=(",", ":")).encode(),
            )
            payload = reply["Payload"].read()
        except (BotoCoreError, ClientError) as exc:
            raise HookFailure(f"the hook could not be invoked: {type(exc).__name__}") from exc
        if reply.get("FunctionError"):
            raise HookFailure(f"the hook failed: {reply['FunctionError']}")
        try:
            return json.loads(payload)
        except ValueError:
            raise HookFailure("the hook answered something that is not JSON") from None


class LocalInvoker:
    """Configured callables, each call run on a worker thread and waited for at most the
    budget. A call that overruns is abandoned, not stopped (Python cannot stop a thread):
    its answer is ignored. Only names from the configuration are ever imported."""

    def __init__(self, hooks: Mapping[str, str | LocalHook], workers: int = 8) -> None:
        self._hooks = dict(hooks)
        self._resolved: dict[str, LocalHook] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._workers = workers
        self._lock = threading.Lock()

    def _resolve(self, name: str) -> LocalHook:
        with self._lock:
            if name not in self._resolved:
                target = self._hooks.get(name)
                if target is None:
                    raise HookFailure(f"no local validation hook is named {name!r}")
                if isinstance(target, str):
                    module, _, attribute = target.partition(":")
                    try:
                        target = getattr(importlib.import_module(module), attribute)
                    except (ImportError, AttributeError) as exc:
                        raise HookFailure(f"the local hook {name!r} cannot be loaded") from exc
                self._resolved[name] = target
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="hook")
            return self._resolved[name]

    def __call__(self, hook: HookConfig, request: dict[str, Any]) -> Any:
        function = self._resolve(hook.target)
        assert self._pool is not None
        future = self._pool.submit(function, request)
        try:
            answer = future.result(timeout=hook.timeout_ms / 1000)
        except FutureTimeout:
            future.cancel()
            raise HookFailure(f"the hook took longer than {hook.timeout_ms} ms") from None
        except Exception as exc:  # the hook's own bug: a failure like any other
            raise HookFailure(f"the hook raised {type(exc).__name__}") from exc
        # The answer goes through JSON, as a Lambda's would: the same contract either way.
        try:
            return json.loads(json.dumps(answer))
        except (TypeError, ValueError):
            raise HookFailure("the hook answered something that is not JSON") from None


class ValidationHooks:
    """Judges a request's submissions with the board's hook: one call, one screening each."""

    def __init__(
        self,
        local: Mapping[str, str | LocalHook] | None = None,
        *,
        lambda_endpoint_url: str | None = None,
    ) -> None:
        self.local = LocalInvoker(local or {})
        self.lambdas = LambdaInvoker(lambda_endpoint_url)
        self.calls = 0  # hook calls made by this environment (tests and metrics)

    @classmethod
    def from_settings(cls, settings: HookSettings) -> ValidationHooks:
        return cls(dict(settings.local))

    def judge(
        self,
        hook: HookConfig,
        board_id: str,
        items: Sequence[tuple[Submission, str | None]],
    ) -> list[Screening]:
        """The screening of each submission, in order (the policy answers for a failure)."""
        self.calls += 1
        invoke = self.lambdas if hook.is_lambda else self.local
        try:
            answer = invoke(hook, hook_request(board_id, items))
            verdicts: list[Any] | HookFailure = parse_hook_answer(answer, len(items))
        except HookFailure as failure:
            verdicts = failure
        return screenings(hook, verdicts, len(items))
