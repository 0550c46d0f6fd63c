"""Player channel authorizer: the Event API's Lambda authorizer for the `players` namespace.

It verifies a subscriber's bearer token by the read function's rules (RS256 with the issuer's
keys in AWS) and answers whom the token names; the namespace's onSubscribe handler compares the
channel with that (leaderboard/api/channel_auth.py says why both check).

Nothing but the token check at cold start: no boto3, no database driver, no Redis client.
PyJWT and cryptography are imported with the first token, the issuer's keys fetched with it.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from leaderboard.api.bearer import TokenVerifier
from leaderboard.api.channel_auth import ISSUER_UNAVAILABLE, decide
from leaderboard.api.observability import logger, metrics, tracer
from leaderboard.settings import TokenSettings

verifier = TokenVerifier(TokenSettings.from_env())  # validated now, keys fetched with a token


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    decision = decide(event, verifier)
    if decision.authorized:
        logger.info("subscription allowed", extra={"reason": decision.reason})
    elif decision.reason == ISSUER_UNAVAILABLE:  # every token refused until the keys come
        logger.warning("subscription refused", extra={"reason": decision.reason})
        metrics.add_metric(name="PlayerChannelIssuerUnavailable", unit="Count", value=1)
    else:
        logger.info("subscription refused", extra={"reason": decision.reason})
        metrics.add_metric(name="PlayerChannelRefused", unit="Count", value=1)
    return decision.response()
