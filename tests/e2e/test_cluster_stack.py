"""Issue 22: `REDIS_CLUSTER=true make run` starts the whole system on a local Redis Cluster of
three masters with a replica each, and a newcomer uses it like the single-node stack."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import redis

from devstack.live_client import LiveClient
from tests.e2e.test_e2e_local_stack import wait_for_events
from tests.support.local_stack import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.cluster]


def _nodes(url: str) -> list[list[str]]:
    node = redis.Redis.from_url(url, decode_responses=True)
    try:
        return [line.split() for line in node.execute_command("CLUSTER", "NODES").splitlines()]
    finally:
        node.close()


def test_make_run_on_a_local_cluster_serves_writes_reads_and_restarts_from_the_record():
    with tempfile.TemporaryDirectory(prefix="lb-cluster-") as tmp:
        data = Path(tmp) / "data"
        stack = Stack(data, env={"REDIS_CLUSTER": "true"})
        try:
            state = json.loads((data / "stack.json").read_text())["env"]
            assert state["REDIS_CLUSTER"] == "true"
            nodes = _nodes(state["REDIS_URL"])
            roles = sorted("master" if "master" in n[2] else "replica" for n in nodes)
            assert roles == ["master"] * 3 + ["replica"] * 3
            assert "embedded Valkey cluster" in stack.log.read_text()

            tokens = stack.tokens()
            admin, server = tokens["ADMIN_TOKEN"], tokens["SERVER_TOKEN"]
            boards = [f"cl-{n}" for n in range(6)]  # spread over the three masters
            for board in boards:
                body = {"regions": ["EU"], "periods": ["all-time", "daily", "weekly"]}
                assert stack.request("PUT", f"/boards/{board}", body, token=admin)[0] == 201
                status, _, reply = stack.request(
                    "POST",
                    f"/boards/{board}/scores",
                    {"player_id": "ada", "score": 5},
                    token=server,
                )
                assert status == 200, reply
                items = [{"player_id": f"p{i}", "score": i, "region": "EU"} for i in range(20)]
                status, _, reply = stack.request(
                    "POST", f"/boards/{board}/scores/batch", {"submissions": items}, token=server
                )
                assert status == 200 and {r["status"] for r in json.loads(reply)["results"]} == {
                    200
                }
            for board in boards:
                status, _, reply = stack.request("GET", f"/boards/{board}/entries?limit=3")
                page = json.loads(reply)
                assert status == 200 and page["total"] == 21
                assert [e["player_id"] for e in page["entries"]] == ["p19", "p18", "p17"]
                wait_for_events(state["DATABASE_URL"], board, 21)
            status, _, reply = stack.request("GET", "/health")
            assert status == 200 and json.loads(reply)["status"] == "ok", reply

            # Live updates come from the cluster too.
            live = json.loads((data / "stack.json").read_text())["live"]
            status, _, reply = stack.request("GET", "/boards/cl-0")
            channel = json.loads(reply)["live_channel"] + "/all-time"
            with LiveClient(live["realtime_url"], live["http_host"], live["api_key"]) as client:
                client.subscribe(channel)
                status, _, reply = stack.request(
                    "POST", "/boards/cl-0/scores", {"player_id": "ada", "score": 50}, token=server
                )
                version = json.loads(reply)["version"]
                message = client.events_until(lambda m: m["version"] >= version, 10)[-1]
                assert message["top"][0]["player_id"] == "ada" and message["total"] == 21
            # The restart rebuilds from PostgreSQL: what it must bring back is recorded first.
            wait_for_events(state["DATABASE_URL"], "cl-0", 22)
        finally:
            stack.stop()

        # A new cluster on restart: the boards come back from PostgreSQL.
        stack = Stack(data, env={"REDIS_CLUSTER": "true"})
        try:
            for board in boards:
                status, _, reply = stack.request("GET", f"/boards/{board}/players/ada")
                ada = json.loads(reply)
                if board == "cl-0":  # 5 + 50 on this increment board: first
                    assert status == 200 and (ada["rank"], ada["score"]) == (1, 55), reply
                else:  # 14 better, p5 tied
                    assert status == 200 and (ada["rank"], ada["score"]) == (15, 5), reply
        finally:
            stack.stop()
