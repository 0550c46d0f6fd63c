"""Logger, Tracer and Metrics: one instance each per execution environment.

Service name and metrics namespace come from POWERTOOLS_SERVICE_NAME and
POWERTOOLS_METRICS_NAMESPACE, set per function in template.yaml.
"""

from __future__ import annotations

import warnings

from aws_lambda_powertools import Logger, Metrics, Tracer

# A request that records no metric is normal (reads); Powertools would warn on every one.
warnings.filterwarnings("ignore", message="No application metrics to publish")

logger = Logger()
# No auto-patching: it would import every SDK it can find (the read path must not pull in
# botocore); functions that call AWS patch botocore themselves.
tracer = Tracer(auto_patch=False)
metrics = Metrics()
