"""`make bench`: run the benchmarks on embedded real stores and write results/ and a table."""

from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path

from benchmarks import bulk
from devstack.servers import EmbeddedPostgres, EmbeddedValkey
from leaderboard.stores.postgres import apply_migrations

RESULTS = Path(__file__).resolve().parent.parent / "bench-results"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--entries", type=int, default=int(os.environ.get("BENCH_ENTRIES", "1000000"))
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    RESULTS.mkdir(exist_ok=True)
    with EmbeddedValkey() as valkey, EmbeddedPostgres() as postgres:
        url = postgres.create_database("bench")
        apply_migrations(url)
        results = bulk.run(valkey.url, url, args.entries)
    rows = bulk.as_rows(results)
    (RESULTS / "bulk.json").write_text(json.dumps(rows, indent=2))
    print(f"{'step':<10} {'entries':>10} {'seconds':>9} {'entries/s':>11} {'peak RSS +MB':>13}")
    for r in rows:
        print(
            f"{r['name']:<10} {r['entries']:>10} {r['seconds']:>9} "
            f"{r['entries_per_second']:>11} {r['peak_rss_growth_mb']:>13}"
        )
    print(f"results in {RESULTS / 'bulk.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
