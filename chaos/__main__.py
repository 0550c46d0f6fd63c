"""`python -m chaos [run|smoke|cluster|cluster-smoke|soak]`: the fault-injection run, its short
form, the same on a Valkey Cluster with masters killed under writes to sharded boards (and its
short form), or the soak.

Exit status 0 only when the checker finds nothing (and, for the soak, the bounds hold).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from chaos.cluster import CLUSTER, CLUSTER_SMOKE, ClusterHarness, cluster_table, run_cluster_chaos
from chaos.harness import Harness
from chaos.run import FULL, RESULTS, SMOKE, run_chaos, save, table
from chaos.soak import SoakPlan, run_soak, soak_ok
from chaos.soak import table as soak_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__)
    parser.add_argument(
        "mode",
        nargs="?",
        default="run",
        choices=["run", "smoke", "cluster", "cluster-smoke", "soak"],
    )
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 600)))
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    # The functions' own logs (JSON lines, EMF metrics) go to a file; progress and figures here.
    RESULTS.mkdir(exist_ok=True)
    terminal = os.fdopen(os.dup(1), "w", buffering=1)
    with (RESULTS / f"chaos-{args.mode}.log").open("ab") as service_log:
        os.dup2(service_log.fileno(), 1)
        os.dup2(service_log.fileno(), 2)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
        stream=terminal,
    )
    for noisy in ("devstack", "devstack.sqs", "botocore", "leaderboard"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # A scheduled run failing while a store is down is expected here; its traceback is noise.
    logging.getLogger("devstack.scheduler").setLevel(logging.ERROR)
    if args.mode in ("cluster", "cluster-smoke"):
        plan = CLUSTER if args.mode == "cluster" else CLUSTER_SMOKE
        with ClusterHarness(node_timeout_ms=plan.node_timeout_ms) as cluster_harness:
            data = run_cluster_chaos(cluster_harness, plan)
        path = save(f"chaos-{args.mode}.json", data)
        print(json.dumps(data, indent=2) if args.json else cluster_table(data), file=terminal)
        print(f"saved {path}", file=terminal)
        return 0 if data["checker"]["ok"] else 1
    with Harness() as harness:
        if args.mode == "soak":
            result = run_soak(harness, SoakPlan(seconds=args.seconds, interval=args.interval))
            path = save("soak.json", result)
            print(json.dumps(result, indent=2) if args.json else soak_table(result), file=terminal)
            print(f"saved {path}", file=terminal)
            return 0 if soak_ok(result) else 1
        data = run_chaos(harness, FULL if args.mode == "run" else SMOKE)
    path = save("chaos.json" if args.mode == "run" else "chaos-smoke.json", data)
    print(json.dumps(data, indent=2) if args.json else table(data), file=terminal)
    print(f"saved {path}", file=terminal)
    return 0 if data["checker"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
