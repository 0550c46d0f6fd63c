"""The deployment template's rules, checked on the parsed template.yaml (acceptance 2 of the
deployment work), and what each function imports at cold start (acceptance 1)."""

from __future__ import annotations

import json
import os
import random
import re
import string
import subprocess
import sys

import pytest
from redis.connection import SSLConnection, parse_url
from redis.crc import key_slot

from devstack.servers.valkey_cluster import slot_ranges
from devstack.template import ROOT, load
from leaderboard.api.channel_auth import MAX_TTL_SECONDS
from leaderboard.domain.live import PLAYER_NAMESPACE
from leaderboard.domain.shards import shard_board_id
from leaderboard.settings import RedisSettings
from leaderboard.stores.redis.keys import BoardKeys

TEMPLATE = load()
RESOURCES = TEMPLATE.raw["Resources"]
GLOBALS = TEMPLATE.raw["Globals"]["Function"]
FUNCTIONS = {n: r for n, r in RESOURCES.items() if r["Type"] == "AWS::Serverless::Function"}
AUTHORIZER_NAME = "PlayerChannelAuthorizerFunction"
# Public reads by design; every other route needs a token.
PUBLIC = {
    "GET /boards",
    "GET /boards/{board_id}",
    "GET /boards/{board_id}/entries",
    "GET /boards/{board_id}/periods",
    "GET /boards/{board_id}/players/{player_id}",
    "GET /boards/{board_id}/players/{player_id}/around",
    "GET /boards/{board_id}/players",
    "GET /boards/{board_id}/players/{player_id}/standings",
    "GET /boards/{board_id}/players/{player_id}/history",
    "GET /tournaments",
    "GET /boards/{board_id}/league",
    "GET /boards/{board_id}/league/players/{player_id}",
    "GET /boards/{board_id}/league/groups/{group_id}",
    "GET /health",
}
ADMIN = {
    "PUT /boards/{board_id}",
    "DELETE /boards/{board_id}/players/{player_id}",
    "POST /boards/{board_id}/rebuild",
    "POST /boards/{board_id}/periods/end",
    "GET /boards/{board_id}/flags",
    "PUT /boards/{board_id}/hidden/{player_id}",
    "DELETE /boards/{board_id}/hidden/{player_id}",
    "GET /boards/{board_id}/hidden",
}


def _ref(value):
    return value.get("Ref") if isinstance(value, dict) else None


def _getatt(value):
    """(resource, attribute) of a GetAtt in either of its YAML forms."""
    target = value["Fn::GetAtt"]
    return tuple(target.split(".", 1)) if isinstance(target, str) else tuple(target)


def _sqs_sources():
    for name, res in FUNCTIONS.items():
        for event in res["Properties"].get("Events", {}).values():
            if event["Type"] == "SQS":
                yield name, res, event["Properties"]


def test_every_function_is_python313_arm64_traced_in_the_vpc():
    assert GLOBALS["Runtime"] == "python3.13" and GLOBALS["Architectures"] == ["arm64"]
    assert GLOBALS["Tracing"] == "Active"
    assert GLOBALS["VpcConfig"]["SubnetIds"] == {"Ref": "SubnetIds"}
    for name, res in FUNCTIONS.items():
        props = res["Properties"]
        assert "Runtime" not in props and "Architectures" not in props, name
        assert res.get("Metadata", {}).get("BuildMethod") == "makefile", name


def test_queue_visibility_is_six_times_the_consumer_timeout_with_partial_failures():
    sources = list(_sqs_sources())
    assert sources, "the persister must consume the score queue"
    for name, res, props in sources:
        queue = RESOURCES[_getatt(props["Queue"])[0]]["Properties"]
        timeout = res["Properties"].get("Timeout", GLOBALS["Timeout"])
        assert queue["VisibilityTimeout"] >= 6 * timeout, name
        assert "ReportBatchItemFailures" in props["FunctionResponseTypes"], name
        assert "DeadLetterQueue" not in res["Properties"], "a function DLQ does not apply to SQS"
        if name == "PersisterFunction":  # big batches; the webhooks' are below
            assert props["BatchSize"] >= 100 and props["MaximumBatchingWindowInSeconds"] > 0
            assert _ref(props["ScalingConfig"]["MaximumConcurrency"]) == "PersisterMaxConcurrency"
    assert {name for name, _, _ in sources} == {"PersisterFunction", "WebhookDeliveryFunction"}


def test_dead_letter_queue_with_redrive_limit_and_alarm():
    redrive = RESOURCES["ScoreQueue"]["Properties"]["RedrivePolicy"]
    dlq = _getatt(redrive["deadLetterTargetArn"])[0]
    assert RESOURCES[dlq]["Type"] == "AWS::SQS::Queue" and 1 < redrive["maxReceiveCount"] <= 10
    alarms = [r["Properties"] for r in RESOURCES.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    on_dlq = [
        a
        for a in alarms
        if any(
            isinstance(d["Value"], dict)
            and "Fn::GetAtt" in d["Value"]
            and _getatt(d["Value"]) == (dlq, "QueueName")
            for d in a["Dimensions"]
        )
    ]
    assert on_dlq and on_dlq[0]["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert on_dlq[0]["Threshold"] == 0
    metrics = {a["MetricName"] for a in alarms}
    assert {"5xx", "ApproximateAgeOfOldestMessage", "Errors"} <= metrics
    with_errors = {_ref(a["Dimensions"][0]["Value"]) for a in alarms if a["MetricName"] == "Errors"}
    assert with_errors == set(FUNCTIONS) - {"MigrationsFunction"}
    assert all(a["AlarmActions"] == [{"Ref": "AlarmTopic"}] for a in alarms)


def test_every_function_logs_to_its_own_group_with_retention():
    groups = []
    for name, res in FUNCTIONS.items():
        group = _ref(res["Properties"]["LoggingConfig"]["LogGroup"])
        assert RESOURCES[group]["Type"] == "AWS::Logs::LogGroup", name
        assert _ref(RESOURCES[group]["Properties"]["RetentionInDays"]) == "LogRetentionDays"
        groups.append(group)
    assert len(set(groups)) == len(FUNCTIONS)


def _statements():
    for name, res in RESOURCES.items():
        props = res.get("Properties", {})
        for policy in props.get("Policies", []) if isinstance(props.get("Policies"), list) else []:
            if isinstance(policy, dict) and "Statement" in policy:
                yield name, policy["Statement"]
            if isinstance(policy, dict) and "PolicyDocument" in policy:
                yield name, policy["PolicyDocument"]["Statement"]
        if res["Type"] == "AWS::IAM::ManagedPolicy":
            yield name, props["PolicyDocument"]["Statement"]


def test_no_wildcard_actions_or_resources_on_data():
    found = 0
    for name, statements in _statements():
        for statement in statements:
            actions = (
                statement["Action"]
                if isinstance(statement["Action"], list)
                else [statement["Action"]]
            )
            assert all("*" not in a for a in actions), (name, actions)
            assert statement["Resource"] != "*", (name, statement)
            found += 1
    assert found >= 4


BATCH = "POST /boards/{board_id}/scores/batch"


def test_every_route_has_an_authorizer_or_is_a_deliberate_public_read():
    keys = {r.route_key for r in TEMPLATE.routes}
    # any valid token: a player submits, signs up and watches as itself
    assert keys == PUBLIC | ADMIN | {
        "POST /boards/{board_id}/scores",
        "POST /boards/{board_id}/join",
        "PUT /boards/{board_id}/players/{player_id}/watch",
        "DELETE /boards/{board_id}/players/{player_id}/watch",
        BATCH,
    }
    assert TEMPLATE.default_authorizer == "LeaderboardJwt"
    for route in TEMPLATE.routes:
        if route.route_key in PUBLIC:
            assert route.method == "GET" and route.authorizer is None, route.route_key
        else:
            assert route.authorizer == "LeaderboardJwt", route.route_key
        if route.route_key in ADMIN:
            assert route.scopes == ("leaderboard/admin",), route.route_key
        if route.route_key == BATCH:
            assert route.scopes == ("leaderboard/server", "leaderboard/admin")
    assert not any("{proxy+}" in r.path for r in TEMPLATE.routes)


def test_the_stack_creates_no_nat_gateway_and_stores_are_private():
    endpoints = {
        r["Properties"]["ServiceName"]["Fn::Sub"].rsplit(".", 1)[1]
        for r in RESOURCES.values()
        if r["Type"] == "AWS::EC2::VPCEndpoint"
    }
    # s3: CloudFormation response URL. No appsync-api endpoint: it refuses public APIs, and with
    # private DNS it would break every other call to a public AppSync API from the VPC.
    # lambda: the write function's validation hooks, only when the deployment allows one.
    # events: the rollover's period.ended events to the bus.
    assert endpoints == {"sqs", "secretsmanager", "s3", "lambda", "events"}
    assert RESOURCES["LambdaEndpoint"]["Condition"] == "HasValidationHooks"
    assert not any(r["Type"] == "AWS::EC2::NatGateway" for r in RESOURCES.values())
    assert RESOURCES["DatabaseInstance"]["Properties"]["PubliclyAccessible"] is False
    assert RESOURCES["DatabaseProxy"]["Properties"]["RequireTLS"] is True
    assert RESOURCES["DatabaseCluster"]["Properties"]["ManageMasterUserPassword"] is True
    assert RESOURCES["ServingCache"]["Properties"]["Engine"] == "valkey"
    assert GLOBALS["Environment"]["Variables"]["REDIS_URL"]["Fn::If"][1]["Fn::Sub"].startswith(
        "rediss://"
    )  # TLS


def test_schedules_and_migrations():
    events = {name: res["Properties"].get("Events", {}) for name, res in FUNCTIONS.items()}
    relay = [e["Properties"]["ScheduleExpression"] for e in events["OutboxRelayFunction"].values()]
    assert relay == ["rate(1 minute)"]
    rollover = {
        e["Properties"]["Input"]: e["Properties"]["ScheduleExpression"]
        for e in events["RolloverFunction"].values()
    }
    assert {json.dumps(json.loads(k)): v for k, v in rollover.items()} == {
        # every minute, the boards whose periods ended (their boards only: lb:rollover-due)
        '{"due": true}': "rate(1 minute)",
        # and each kind's sweep of every board, a net under that list
        '{"kinds": ["daily", "custom"]}': "cron(5 0 * * ? *)",
        '{"kinds": ["weekly"]}': "cron(5 0 ? * MON *)",
        '{"kinds": ["monthly"]}': "cron(5 0 1 * ? *)",
    }
    custom = RESOURCES["DatabaseMigrations"]["Properties"]
    assert _getatt(custom["ServiceToken"]) == ("MigrationsFunction", "Arn")
    assert _ref(custom["SharedLayer"]) == "SharedLayer"  # new code, migrations run again
    assert custom["ServiceTimeout"] <= 900
    assert custom["Database"]["Fn::If"][1] == {"Ref": "DatabaseProxyTargets"}  # after the DB
    for name in ("OutboxRelayFunction", "RolloverFunction"):  # a run never overlaps the last
        assert FUNCTIONS[name]["Properties"]["ReservedConcurrentExecutions"] == 1


def test_every_function_but_the_live_publisher_may_read_the_database_secret():
    # The publisher reads Redis only; the webhook delivery, its queue and secret only; the
    # player channel authorizer, tokens only.
    without = ("LivePublisherFunction", "WebhookDeliveryFunction", AUTHORIZER_NAME)
    for name, res in FUNCTIONS.items():
        reads = {"Ref": "DatabaseSecretRead"} in res["Properties"].get("Policies", [])
        assert reads is (name not in without), name
    assert "DATABASE_SECRET_ID" in GLOBALS["Environment"]["Variables"]


# --- the serving index: ElastiCache Serverless by default, a node-based cluster on request ---
PARAMETERS = TEMPLATE.raw["Parameters"]
SERVERLESS_URL = "rediss://${ServingCache.Endpoint.Address}:${ServingCache.Endpoint.Port}"
CLUSTER_URL = (
    "rediss://${ServingCluster.ConfigurationEndPoint.Address}"
    ":${ServingCluster.ConfigurationEndPoint.Port}"
)
CACHE_RESOURCES = {
    "CacheSecurityGroup",
    "ServingCache",
    "ServingCluster",
    "ServingClusterParameters",
    "ServingClusterSubnets",
}


def _deployed(**given):
    """The template's conditions and a resolver for Fn::If, for these parameter values (the
    others at their defaults), as CloudFormation evaluates them."""
    values = {name: p.get("Default") for name, p in PARAMETERS.items()} | given
    conditions: dict[str, bool] = {}

    def evaluate(node):
        ((fn, args),) = node.items()
        if fn in ("Condition", "Fn::Condition"):  # JSON and YAML short forms
            if args not in conditions:
                conditions[args] = evaluate(TEMPLATE.raw["Conditions"][args])
            return conditions[args]
        if fn == "Fn::Equals":
            left, right = (values[a["Ref"]] if _ref(a) else a for a in args)
            return str(left) == str(right)
        if fn == "Fn::And":
            return all(evaluate(a) for a in args)
        if fn == "Fn::Or":
            return any(evaluate(a) for a in args)
        if fn == "Fn::Not":
            return not evaluate(args[0])
        raise AssertionError(f"unexpected {fn} in a condition")

    for name in TEMPLATE.raw["Conditions"]:
        evaluate({"Condition": name})

    def resolve(value):
        while isinstance(value, dict) and "Fn::If" in value:
            name, then, otherwise = value["Fn::If"]
            value = then if conditions[name] else otherwise
        return value

    created = {n for n, r in RESOURCES.items() if conditions.get(r.get("Condition"), True)}
    return created, resolve


def test_the_serverless_cache_stays_the_default():
    mode = PARAMETERS["RedisMode"]
    assert (mode["Default"], mode["AllowedValues"]) == ("serverless", ["serverless", "cluster"])
    created, resolve = _deployed()
    assert created & CACHE_RESOURCES == {"CacheSecurityGroup", "ServingCache"}
    cache = RESOURCES["ServingCache"]["Properties"]
    assert (cache["Engine"], cache["MajorEngineVersion"]) == ("valkey", "8")
    assert cache["SecurityGroupIds"] == [{"Ref": "CacheSecurityGroup"}]
    env = GLOBALS["Environment"]["Variables"]
    assert _sub(resolve(env["REDIS_URL"])) == SERVERLESS_URL
    assert resolve(env["REDIS_CLUSTER"]) == "true"
    ingress = RESOURCES["CacheSecurityGroup"]["Properties"]["SecurityGroupIngress"]
    assert [(r["FromPort"], resolve(r["ToPort"])) for r in ingress] == [(6379, 6380)]


def test_an_existing_redis_creates_no_cache_in_either_mode():
    for mode in ("serverless", "cluster"):
        created, resolve = _deployed(ExistingRedisUrl="rediss://cache.example:6379", RedisMode=mode)
        assert not created & CACHE_RESOURCES, mode
        env = GLOBALS["Environment"]["Variables"]
        assert resolve(env["REDIS_URL"]) == {"Ref": "ExistingRedisUrl"}
        assert resolve(env["REDIS_CLUSTER"]) == {"Ref": "ExistingRedisCluster"}


def test_cluster_mode_creates_a_valkey_replication_group_in_cluster_mode():
    created, _ = _deployed(RedisMode="cluster")
    assert created & CACHE_RESOURCES == CACHE_RESOURCES - {"ServingCache"}
    group = RESOURCES["ServingCluster"]
    assert group["Type"] == "AWS::ElastiCache::ReplicationGroup"
    props = group["Properties"]
    assert props["Engine"] == "valkey" and props["ClusterMode"].lower() == "enabled"
    # One primary per node group owns a share of the slots; resharding migrates slots online
    # instead of replacing the cluster.
    assert group["UpdatePolicy"] == {"UseOnlineResharding": True}
    assert _ref(props["NumNodeGroups"]) == "RedisNodeGroups"
    assert _ref(props["ReplicasPerNodeGroup"]) == "RedisReplicasPerNodeGroup"
    assert _ref(props["CacheNodeType"]) == "RedisNodeType"
    assert _ref(props["EngineVersion"]) == "RedisEngineVersion"
    assert "NodeGroupConfiguration" not in props  # with it, a new replica count replaces
    parameters = RESOURCES[_ref(props["CacheParameterGroupName"])]
    assert parameters["Type"] == "AWS::ElastiCache::ParameterGroup"
    assert parameters["Properties"]["CacheParameterGroupFamily"] == "valkey8"
    assert parameters["Properties"]["Properties"] == {
        "cluster-enabled": "yes",
        "maxmemory-policy": "noeviction",  # an evicted score would look never submitted
    }
    assert all(v.startswith("8.") for v in PARAMETERS["RedisEngineVersion"]["AllowedValues"])
    subnets = RESOURCES[_ref(props["CacheSubnetGroupName"])]
    assert subnets["Type"] == "AWS::ElastiCache::SubnetGroup"
    assert subnets["Properties"]["SubnetIds"] == {"Ref": "SubnetIds"}
    assert props["SecurityGroupIds"] == [{"Ref": "CacheSecurityGroup"}]
    assert group["DeletionPolicy"] == "Delete"  # an index, rebuilt from PostgreSQL


def test_the_cluster_takes_tls_only_is_encrypted_and_fails_over_across_zones():
    props = RESOURCES["ServingCluster"]["Properties"]
    assert props["TransitEncryptionEnabled"] is True
    assert props.get("TransitEncryptionMode", "required") == "required"  # never plaintext
    assert props["AtRestEncryptionEnabled"] is True
    assert props["AutomaticFailoverEnabled"] is True and props["MultiAZEnabled"] is True
    replicas = PARAMETERS["RedisReplicasPerNodeGroup"]
    assert replicas["MinValue"] >= 1, "failover needs a replica in every node group"
    assert replicas["MaxValue"] <= 5
    # Reached as the serverless cache is: TLS, no user group, no AUTH token (the functions'
    # URL carries no credentials), only from the functions' security group, on 6379 alone.
    assert not {"AuthToken", "UserGroupIds"} & set(props)
    assert not {"UserGroupId"} & set(RESOURCES["ServingCache"]["Properties"])
    assert props["Port"] == 6379
    _, resolve = _deployed(RedisMode="cluster")
    ingress = RESOURCES["CacheSecurityGroup"]["Properties"]["SecurityGroupIngress"]
    assert [(r["FromPort"], resolve(r["ToPort"])) for r in ingress] == [(6379, 6379)]
    assert [_ref(r["SourceSecurityGroupId"]) for r in ingress] == ["FunctionSecurityGroup"]
    egress = RESOURCES["FunctionSecurityGroup"]["Properties"]["SecurityGroupEgress"]
    assert any(r["FromPort"] <= 6379 <= r["ToPort"] for r in egress)


def test_cluster_parameters_and_their_defaults():
    expected = {
        "RedisNodeType": ("String", "cache.r7g.large"),
        # 4: a board of 4 or 8 shards puts the same number on every node group (deploy.md).
        "RedisNodeGroups": ("Number", 4),
        "RedisReplicasPerNodeGroup": ("Number", 1),
        "RedisEngineVersion": ("String", "8.2"),
    }
    for name, (kind, default) in expected.items():
        assert (PARAMETERS[name]["Type"], PARAMETERS[name]["Default"]) == (kind, default), name
    groups = PARAMETERS["RedisNodeGroups"]
    assert groups["MinValue"] == 1 and groups["MaxValue"] >= 90
    pattern = re.compile(PARAMETERS["RedisNodeType"]["AllowedPattern"])
    assert pattern.fullmatch("cache.r7g.large") and pattern.fullmatch("cache.m7g.2xlarge")
    assert not pattern.fullmatch("r7g.large")
    interface = TEMPLATE.raw["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
    (serving,) = [g for g in interface if "ExistingRedisUrl" in g["Parameters"]]
    assert {"RedisMode", *expected} <= set(serving["Parameters"])
    listed = [p for g in interface for p in g["Parameters"]]
    assert sorted(listed) == sorted(PARAMETERS), "every parameter in exactly one group"


def test_every_function_gets_the_configuration_endpoint_and_cluster_mode():
    _, resolve = _deployed(RedisMode="cluster")
    for name, spec in TEMPLATE.functions.items():
        env = spec.environment
        assert _sub(resolve(env["REDIS_URL"])) == CLUSTER_URL, name
        assert resolve(env["REDIS_CLUSTER"]) == "true", name


def test_a_submission_waits_for_a_replica_on_the_node_based_cluster_only():
    # The node-based cluster replicates asynchronously: a write is acknowledged once one
    # replica has it. Serverless asks none; an existing Redis as RedisReplicaAcks says.
    acks = PARAMETERS["RedisReplicaAcks"]
    assert (acks["Type"], acks["Default"], acks["MinValue"]) == ("Number", 0, 0)
    cases = [
        ({"RedisMode": "cluster"}, "1"),
        ({}, "0"),
        (
            {"ExistingRedisUrl": "rediss://cache:6379", "RedisReplicaAcks": 2},
            {"Ref": "RedisReplicaAcks"},
        ),
    ]
    for given, expected in cases:
        _, resolve = _deployed(**given)
        for name, spec in TEMPLATE.functions.items():
            assert resolve(spec.environment["REDIS_REPLICA_ACKS"]) == expected, (given, name)
    assert PARAMETERS["RedisReplicasPerNodeGroup"]["MinValue"] >= 1  # so "1" can be met


def test_the_functions_read_that_url_as_a_tls_cluster(monkeypatch):
    url = "rediss://clustercfg.leaderboard-dev-cluster.abc123.use1.cache.amazonaws.com:6379"
    monkeypatch.setenv("REDIS_URL", url)
    monkeypatch.setenv("REDIS_CLUSTER", "true")
    settings = RedisSettings.from_env()
    assert (settings.url, settings.cluster) == (url, True)
    assert parse_url(settings.url)["connection_class"] is SSLConnection


def _node_groups_holding(board_id, shards, node_groups):
    """How many of a board's shards each node group holds, with the slots split into equal
    contiguous ranges (the local cluster's split, and a new cluster's)."""
    ranges = slot_ranges(node_groups)
    counts = [0] * node_groups
    for shard in range(shards):
        slot = key_slot(BoardKeys(shard_board_id(board_id, shard, shards)).cfg.encode())
        counts[next(n for n, (lo, hi) in enumerate(ranges) if lo <= slot <= hi)] += 1
    return counts


def test_the_default_node_groups_spread_boards_of_4_and_8_shards_evenly():
    # docs/deploy.md recommends the default for boards of 4 and 8 shards; shards.py places
    # every board's shards in their own slot ranges, so each node group takes its share.
    groups = PARAMETERS["RedisNodeGroups"]["Default"]
    rng = random.Random(22)
    ids = [
        "".join(rng.choices(string.ascii_lowercase + "-", k=rng.randint(3, 24))) for _ in range(200)
    ]
    for board_id in ids:
        for shards in (groups, 2 * groups):
            counts = _node_groups_holding(board_id, shards, groups)
            assert counts == [shards // groups] * groups, (board_id, shards, counts)
    assert _node_groups_holding("launch", 2, 2) == [1, 1], "two shards, two node groups"


def test_validation_hooks_invoke_exactly_the_allowed_arns_and_nothing_without_them():
    """Least privilege: lambda:InvokeFunction on the ValidationHookArns only, on the write
    function only, and no statement at all (nor a Lambda endpoint) when the list is empty."""
    parameter = TEMPLATE.raw["Parameters"]["ValidationHookArns"]
    assert parameter["Type"] == "CommaDelimitedList" and parameter["Default"] == ""
    condition = TEMPLATE.raw["Conditions"]["HasValidationHooks"]
    assert condition == {
        "Fn::Not": [{"Fn::Equals": [{"Fn::Join": ["", {"Ref": "ValidationHookArns"}]}, ""]}]
    }
    granted = {}
    for name, res in FUNCTIONS.items():
        for policy in res["Properties"].get("Policies", []):
            text = json.dumps(policy)
            if "lambda:" in text:
                granted[name] = policy
    assert set(granted) == {"ApiWriteFunction"}, "only the write function calls hooks"
    when, statement, otherwise = granted["ApiWriteFunction"]["Fn::If"]
    assert when == "HasValidationHooks" and otherwise == {"Ref": "AWS::NoValue"}
    assert statement == {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "lambda:InvokeFunction",
                "Resource": {"Ref": "ValidationHookArns"},
            }
        ]
    }
    allowed = {"Fn::Join": [",", {"Ref": "ValidationHookArns"}]}
    for name in ("ApiWriteFunction", "ApiAdminFunction"):  # calls them / lets boards name them
        variables = FUNCTIONS[name]["Properties"]["Environment"]["Variables"]
        assert variables["VALIDATION_HOOK_ARNS"] == allowed, name
    route = FUNCTIONS["ApiAdminFunction"]["Properties"]["Events"]["ListFlags"]["Properties"]
    assert route["Path"] == "/boards/{board_id}/flags"
    assert route["Auth"]["AuthorizationScopes"] == ["leaderboard/admin"]


def test_every_parameter_is_documented():
    deploy = (ROOT / "docs/deploy.md").read_text()
    configuration = (ROOT / "docs/configuration.md").read_text()
    for name in PARAMETERS:
        assert f"| `{name}` |" in deploy, f"{name} is missing from deploy.md's parameter tables"
        assert f"`{name}`" in configuration, f"{name} is missing from configuration.md"


# --- live updates: the AppSync Events API and its publisher ---------------------------------
PUBLISHER = FUNCTIONS["LivePublisherFunction"]["Properties"]
PLAYERS = RESOURCES["PlayerChannelNamespace"]["Properties"]
AUTHORIZER = FUNCTIONS[AUTHORIZER_NAME]["Properties"]


def _auth_types(modes):
    return [m["AuthType"] for m in modes]


def _sub(value):
    return value["Fn::Sub"] if isinstance(value, dict) else None


def test_live_event_api_subscribes_with_the_api_key_and_publishes_with_iam_only():
    api = RESOURCES["LiveEventApi"]
    assert api["Type"] == "AWS::AppSync::Api"
    config = api["Properties"]["EventConfig"]
    # AWS_LAMBDA: the player channels' authorizer (below), for their subscribers only.
    assert sorted(_auth_types(config["AuthProviders"])) == ["API_KEY", "AWS_IAM", "AWS_LAMBDA"]
    assert _auth_types(config["ConnectionAuthModes"]) == ["API_KEY"]
    assert _auth_types(config["DefaultSubscribeAuthModes"]) == ["API_KEY"]
    assert _auth_types(config["DefaultPublishAuthModes"]) == ["AWS_IAM"]
    namespaces = {
        n: r["Properties"]["Name"]
        for n, r in RESOURCES.items()
        if r["Type"] == "AWS::AppSync::ChannelNamespace"
    }
    assert namespaces == {
        "LiveChannelNamespace": "leaderboards",
        "PlayerChannelNamespace": "players",
    }
    namespace = RESOURCES["LiveChannelNamespace"]["Properties"]
    assert namespace["Name"] == "leaderboards"
    assert _getatt(namespace["ApiId"]) == ("LiveEventApi", "ApiId")
    assert _auth_types(namespace["PublishAuthModes"]) == ["AWS_IAM"]  # never the API key
    assert _auth_types(namespace["SubscribeAuthModes"]) == ["API_KEY"]
    key = RESOURCES["LiveApiKey"]
    assert key["Type"] == "AWS::AppSync::ApiKey"
    assert _getatt(key["Properties"]["ApiId"]) == ("LiveEventApi", "ApiId")
    # AppSync gives a key without Expires 7 days: the deploy must pass it, in Unix seconds.
    assert _ref(key["Properties"]["Expires"]) == "LiveApiKeyExpires"
    expires = TEMPLATE.raw["Parameters"]["LiveApiKeyExpires"]
    assert expires["Type"] == "Number" and "Default" not in expires
    assert 1_700_000_000 <= expires["MinValue"] < expires["MaxValue"] < 10**10  # not ms


def test_live_publisher_may_only_publish_on_the_namespaces():
    """appsync:EventPublish on the two namespaces' ARNs, nothing else: no wildcard, no API."""
    statements = [s for p in PUBLISHER["Policies"] for s in p["Statement"]]
    assert statements == [
        {
            "Effect": "Allow",
            "Action": "appsync:EventPublish",
            "Resource": [
                {"Fn::GetAtt": "LiveChannelNamespace.ChannelNamespaceArn"},
                {"Fn::GetAtt": "PlayerChannelNamespace.ChannelNamespaceArn"},
            ],
        }
    ]
    for name in ("LiveChannelNamespace", "PlayerChannelNamespace"):
        assert RESOURCES[name]["Type"] == "AWS::AppSync::ChannelNamespace"
    granted = {
        name for name, statements in _statements() for s in statements if "appsync" in str(s)
    }
    assert granted == {"LivePublisherFunction"}, "no one else may publish"
    assert "Role" not in PUBLISHER and "RolePath" not in PUBLISHER  # SAM's role, these policies
    # Layers: botocore (SigV4) from DepsAws; no database driver.
    assert [_ref(x) for x in PUBLISHER["Layers"]] == ["DepsAwsLayer"]


def test_live_publisher_runs_every_minute_with_a_dlq_and_no_retries():
    (event,) = PUBLISHER["Events"].values()
    assert event["Type"] == "ScheduleV2"
    props = event["Properties"]
    assert props["ScheduleExpression"] == "rate(1 minute)"
    assert props["RetryPolicy"] == {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60}
    dlq = _getatt(props["DeadLetterConfig"]["Arn"])
    assert dlq == ("LivePublisherScheduleDLQ", "Arn")
    queue = RESOURCES["LivePublisherScheduleDLQ"]
    assert queue["Type"] == "AWS::SQS::Queue"
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 86400
    # Invoked asynchronously: no Lambda retries and no stale runs queued behind a busy one.
    assert PUBLISHER["EventInvokeConfig"] == {
        "MaximumRetryAttempts": 0,
        "MaximumEventAgeInSeconds": 60,
    }
    run = int(PUBLISHER["Environment"]["Variables"]["LIVE_RUN_SECONDS"])
    assert run + 5 <= PUBLISHER["Timeout"] < 2 * 60  # ends before the run after next starts
    assert PUBLISHER["ReservedConcurrentExecutions"] == 2  # one run hands over to the next
    assert PUBLISHER["MemorySize"] == 256


def test_live_publisher_environment():
    env = TEMPLATE.functions["LivePublisherFunction"].environment
    assert env["POWERTOOLS_SERVICE_NAME"] == "leaderboard-live-publisher"
    assert _sub(env["LIVE_EVENTS_URL"]) == "https://${LiveEventApi.Dns.Http}/event"
    assert env["LIVE_NAMESPACE"] == RESOURCES["LiveChannelNamespace"]["Properties"]["Name"]
    assert env["LIVE_PLAYER_NAMESPACE"] == PLAYERS["Name"] == PLAYER_NAMESPACE
    assert _ref(env["LIVE_PUBLISH_RATE"]) == "LivePublishRate"
    assert env["LIVE_RUN_SECONDS"] == "60"
    rate = TEMPLATE.raw["Parameters"]["LivePublishRate"]
    assert (rate["Default"], rate["MinValue"], rate["MaxValue"]) == (4, 1, 20)
    assert "REDIS_URL" in env and "VpcConfig" in GLOBALS  # Redis, in the VPC like the others


def _alarm(name):
    alarm = RESOURCES[name]
    assert alarm["Type"] == "AWS::CloudWatch::Alarm", name
    props = alarm["Properties"]
    assert props["AlarmActions"] == [{"Ref": "AlarmTopic"}], name
    return props


def test_live_publisher_alarms():
    errors = _alarm("LivePublisherErrorsAlarm")
    assert (errors["Namespace"], errors["MetricName"]) == ("AWS/Lambda", "Errors")
    assert _ref(errors["Dimensions"][0]["Value"]) == "LivePublisherFunction"
    # Powertools publishes custom metrics with one dimension, service, and an alarm must name
    # exactly the dimensions a metric has.
    service = [{"Name": "service", "Value": "leaderboard-live-publisher"}]
    stopped = _alarm("LivePublisherStoppedAlarm")
    assert (stopped["Namespace"], stopped["MetricName"]) == ("Leaderboard", "LiveTicks")
    assert stopped["Dimensions"] == service
    assert (stopped["Statistic"], stopped["Period"] * stopped["EvaluationPeriods"]) == ("Sum", 300)
    assert (stopped["ComparisonOperator"], stopped["Threshold"]) == ("LessThanThreshold", 1)
    assert stopped["TreatMissingData"] == "breaching"  # no ticks at all is the failure
    failures = _alarm("LivePublishFailuresAlarm")
    assert (failures["Namespace"], failures["MetricName"]) == ("Leaderboard", "LivePublishFailures")
    assert failures["Dimensions"] == service
    assert (failures["Statistic"], failures["Period"]) == ("Sum", 60)
    assert (failures["DatapointsToAlarm"], failures["EvaluationPeriods"]) == (3, 5)
    assert (failures["ComparisonOperator"], failures["Threshold"]) == ("GreaterThanThreshold", 0)
    refused = _alarm("LivePublishRefusedAlarm")  # a refusal is never transient: the first
    assert (refused["Namespace"], refused["MetricName"]) == ("Leaderboard", "LivePublishRefused")
    assert refused["Dimensions"] == service
    assert (refused["Statistic"], refused["Period"], refused["EvaluationPeriods"]) == ("Sum", 60, 1)
    assert (refused["ComparisonOperator"], refused["Threshold"]) == ("GreaterThanThreshold", 0)
    assert GLOBALS["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"] == "Leaderboard"
    dlq = _alarm("LivePublisherScheduleDLQAlarm")
    assert dlq["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert _getatt(dlq["Dimensions"][0]["Value"]) == ("LivePublisherScheduleDLQ", "QueueName")
    assert (dlq["ComparisonOperator"], dlq["Threshold"]) == ("GreaterThanThreshold", 0)


def test_the_live_publisher_runs_in_subnets_that_can_reach_the_event_api():
    vpc = RESOURCES["LivePublisherFunction"]["Properties"]["VpcConfig"]
    condition, given, default = vpc["SubnetIds"]["Fn::If"]
    assert condition == "HasLivePublisherSubnets"
    assert (_ref(given), _ref(default)) == ("LivePublisherSubnetIds", "SubnetIds")
    assert vpc["SecurityGroupIds"] == [{"Ref": "FunctionSecurityGroup"}]
    parameter = TEMPLATE.raw["Parameters"]["LivePublisherSubnetIds"]
    assert parameter["Type"] == "CommaDelimitedList" and parameter["Default"] == ""
    egress = RESOURCES["FunctionSecurityGroup"]["Properties"]["SecurityGroupEgress"]
    assert any(rule["FromPort"] == 443 and rule["CidrIp"] == "0.0.0.0/0" for rule in egress)


def test_live_outputs_give_a_client_what_it_needs():
    outputs = TEMPLATE.raw["Outputs"]
    assert _sub(outputs["LiveRealtimeUrl"]["Value"]) == (
        "wss://${LiveEventApi.Dns.Realtime}/event/realtime"
    )
    assert _sub(outputs["LiveHttpUrl"]["Value"]) == "https://${LiveEventApi.Dns.Http}/event"
    assert _getatt(outputs["LiveApiKey"]["Value"]) == ("LiveApiKey", "ApiKey")
    assert "not a secret" in outputs["LiveApiKey"]["Description"].lower()
    assert outputs["LiveNamespace"]["Value"] == "leaderboards"
    assert outputs["LivePlayerNamespace"]["Value"] == PLAYER_NAMESPACE


# --- player channels: the players namespace, its authorizer and its onSubscribe handler -------


def test_the_players_namespace_subscribes_through_the_authorizer_and_publishes_with_iam():
    assert _getatt(PLAYERS["ApiId"]) == ("LiveEventApi", "ApiId")
    assert PLAYERS["Name"] == PLAYER_NAMESPACE
    assert _auth_types(PLAYERS["SubscribeAuthModes"]) == ["AWS_LAMBDA"]  # never the key alone
    assert _auth_types(PLAYERS["PublishAuthModes"]) == ["AWS_IAM"]  # the publisher only
    providers = RESOURCES["LiveEventApi"]["Properties"]["EventConfig"]["AuthProviders"]
    (provider,) = [p for p in providers if p["AuthType"] == "AWS_LAMBDA"]
    config = provider["LambdaAuthorizerConfig"]
    assert _getatt(config["AuthorizerUri"]) == (AUTHORIZER_NAME, "Arn")
    # A yes may be reused for the token this long (the authorizer answers less near expiry).
    assert config["AuthorizerResultTtlInSeconds"] == MAX_TTL_SECONDS
    assert "IdentityValidationExpression" not in config  # the token is `Bearer <JWT>`


def test_the_players_namespace_checks_every_channel_on_subscribe():
    """AppSync may reuse the authorizer's answer for a token on its other subscriptions: the
    namespace's onSubscribe handler compares each channel with it (run in
    tests/functions/test_live_authorizer.py)."""
    code = PLAYERS["CodeHandlers"]
    assert "export function onSubscribe(ctx)" in code
    assert "util.unauthorized()" in code and "ctx.identity.handlerContext" in code
    assert "onPublish" not in code, "the publisher's messages pass as published"
    assert "HandlerConfigs" not in PLAYERS and "CodeS3Location" not in PLAYERS


def test_only_the_event_api_may_invoke_the_authorizer():
    permissions = [
        r["Properties"]
        for r in RESOURCES.values()
        if r["Type"] == "AWS::Lambda::Permission"
        and _getatt(r["Properties"]["FunctionName"])[0] == AUTHORIZER_NAME
    ]
    assert permissions == [
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Fn::GetAtt": f"{AUTHORIZER_NAME}.Arn"},
            "Principal": "appsync.amazonaws.com",
            "SourceAccount": {"Ref": "AWS::AccountId"},
            "SourceArn": {"Fn::GetAtt": "LiveEventApi.ApiArn"},
        }
    ]
    assert "Events" not in AUTHORIZER, "nothing else invokes it"


def test_the_authorizer_checks_tokens_as_the_read_function_does():
    env = TEMPLATE.functions[AUTHORIZER_NAME].environment
    reader = TEMPLATE.functions["ApiReadFunction"].environment
    for name in ("JWT_ISSUER", "JWT_AUDIENCE", "JWT_JWKS_URL", "JWT_SECRET"):
        assert env[name] == reader[name], name
    assert env["JWT_SECRET"] == "", "no shared secret in AWS: RS256 only"
    assert env["POWERTOOLS_SERVICE_NAME"] == "leaderboard-live-authorizer"
    assert AUTHORIZER["VpcConfig"] == READER["VpcConfig"]  # where the issuer's keys are reachable
    assert [_ref(x) for x in AUTHORIZER["Layers"]] == ["DepsJwtLayer"]
    assert "Policies" not in AUTHORIZER, "no AWS call, no secret: the basic execution role"
    assert (ROOT / AUTHORIZER["CodeUri"] / "app.py").is_file()
    group = RESOURCES[_ref(AUTHORIZER["LoggingConfig"]["LogGroup"])]["Properties"]
    assert group["LogGroupName"] == {"Fn::Sub": "/leaderboard/${Stage}/live-authorizer"}


def test_the_authorizer_alarms():
    errors = _alarm("PlayerChannelAuthorizerErrorsAlarm")
    assert (errors["Namespace"], errors["MetricName"]) == ("AWS/Lambda", "Errors")
    assert _ref(errors["Dimensions"][0]["Value"]) == AUTHORIZER_NAME
    issuer = _alarm("PlayerChannelIssuerUnavailableAlarm")
    assert (issuer["Namespace"], issuer["MetricName"]) == (
        "Leaderboard",
        "PlayerChannelIssuerUnavailable",
    )
    assert issuer["Dimensions"] == [{"Name": "service", "Value": "leaderboard-live-authorizer"}]
    assert (issuer["ComparisonOperator"], issuer["Threshold"]) == ("GreaterThanThreshold", 0)


DEPENDENCY_LAYERS = sorted(
    n
    for n, r in RESOURCES.items()
    if r["Type"] == "AWS::Serverless::LayerVersion" and n != "SharedLayer"
)


@pytest.fixture(scope="module")
def host_layers(tmp_path_factory):
    """Each dependency layer installed for this machine from the same pins, so a function can
    be imported with nothing but its own layers on the path, as in Lambda."""
    base = tmp_path_factory.mktemp("layers")
    folders = {}
    for layer in DEPENDENCY_LAYERS:
        content = ROOT / RESOURCES[layer]["Properties"]["ContentUri"]
        target = base / layer
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--disable-pip-version-check",
                "-r",
                str(content / "requirements.txt"),
                "--target",
                str(target),
            ],
            check=True,
        )
        folders[layer] = target
    return folders


_PROBE = """
import importlib.util, json, sys
code, shared, layers = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path[:] = [p for p in sys.path if "site-packages" not in p]  # the stdlib only
sys.path[:0] = [code, shared, *layers]
before = set(sys.modules)
spec = importlib.util.spec_from_file_location("app", code + "/app.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
third = set()
for name in set(sys.modules) - before:
    origin = getattr(sys.modules[name], "__file__", None) or ""
    if any(origin.startswith(layer) for layer in layers):
        third.add(name)
print(json.dumps(sorted(third)))
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_each_function_imports_with_only_its_layers(name, host_layers):
    spec = TEMPLATE.functions[name]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "DATABASE_URL": "postgresql://u@127.0.0.1:1/db",
        "SCORE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/000000000000/scores",
        "LIVE_EVENTS_URL": "https://example.appsync-api.us-east-1.amazonaws.com/event",
        "JWT_ISSUER": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE",
        "JWT_AUDIENCE": "exampleclientid",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_SERVICE_NAME": name,
        "WEBHOOK_URL": "https://hooks.example.com/leaderboard",
        "WEBHOOK_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:000000000000:secret:hook-AbCdEf",
        "WEBHOOK_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/000000000000/webhooks",
        "WEBHOOK_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/000000000000/webhooks-dlq",
    }
    layers = [str(host_layers[layer]) for layer in spec.layers if layer in host_layers]
    # The python3.13 runtime bundles boto3/botocore (the X-Ray SDK needs botocore): last on
    # the path, as there.
    layers.append(str(host_layers["DepsAwsLayer"]))
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            _PROBE,
            str(spec.code_dir),
            str(ROOT / "layers/shared/python"),
            *layers,
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"{name} fails to import with its layers:\n{result.stderr}"
    modules = set(json.loads(result.stdout))
    imported = {module.split(".")[0] for module in modules}
    if name == "ApiReadFunction":
        assert not imported & {"boto3", "psycopg"}, "the read path stays lean"
        # Tokens load their libraries, cold starts do not. (redis-py's `import cryptography`,
        # to learn whether it could check OCSP, loads the package's __init__ only, no binding.)
        assert "jwt" not in imported, "PyJWT is imported with the first token"
        assert {m for m in modules if m.startswith("cryptography")} <= {
            "cryptography",
            "cryptography.__about__",
        }
    if name == "ApiWriteFunction":
        assert "boto3" in imported and "psycopg" not in imported
    if name == "PersisterFunction":
        assert "psycopg" in imported and "boto3" not in imported
    if name == "LivePublisherFunction":
        assert "psycopg" not in imported, "the publisher reads Redis only"
    if name == "WebhookDeliveryFunction":
        assert not imported & {"psycopg", "redis"}, "the delivery reads its queue only"
    if name == AUTHORIZER_NAME:  # tokens only, and their libraries with the first one
        assert not imported & {"boto3", "psycopg", "redis", "jwt"}, imported
        assert {m for m in modules if m.startswith("cryptography")} <= {
            "cryptography",
            "cryptography.__about__",
        }


def test_layers_are_fully_pinned():
    assert {"DepsCoreLayer", "DepsAwsLayer", "DepsPostgresLayer", "DepsJwtLayer"} <= set(
        DEPENDENCY_LAYERS
    )
    for layer in DEPENDENCY_LAYERS:
        lines = (
            (ROOT / RESOURCES[layer]["Properties"]["ContentUri"] / "requirements.txt")
            .read_text()
            .splitlines()
        )
        pins = [line for line in lines if line.strip() and not line.startswith("#")]
        assert pins and all("==" in line for line in pins), layer


# --- the read function's own token check -----------------------------------------------------
READER = FUNCTIONS["ApiReadFunction"]["Properties"]


def test_the_read_function_verifies_tokens_as_the_authorizer_would():
    """No authorizer can be optional on an HTTP API route: the reads keep none, and the read
    function gets the authorizer's issuer and audiences and the issuer's JWK set, RS256."""
    authorizer = RESOURCES["HttpApi"]["Properties"]["Auth"]["Authorizers"]["LeaderboardJwt"]
    env = TEMPLATE.functions["ApiReadFunction"].environment
    assert env["JWT_ISSUER"] == authorizer["JwtConfiguration"]["issuer"] == {"Ref": "JwtIssuer"}
    assert env["JWT_AUDIENCE"] == {"Fn::Join": [",", authorizer["JwtConfiguration"]["audience"]]}
    assert env["JWT_JWKS_URL"] == {
        "Fn::If": [
            "HasJwtJwksUrl",
            {"Ref": "JwtJwksUrl"},
            {"Fn::Sub": "${JwtIssuer}/.well-known/jwks.json"},
        ]
    }
    assert env["JWT_SECRET"] == "", "no shared secret in AWS: RS256 only"
    parameter = PARAMETERS["JwtJwksUrl"]
    assert parameter["Default"] == "" and re.fullmatch(parameter["AllowedPattern"], "")
    assert not re.fullmatch(parameter["AllowedPattern"], "http://issuer.example/keys")
    for route in TEMPLATE.routes:
        if route.function == "ApiReadFunction":
            assert route.authorizer is None and route.method == "GET", route.route_key


def test_only_the_token_checking_functions_get_the_jwt_layer():
    with_jwt = {name for name, spec in TEMPLATE.functions.items() if "DepsJwtLayer" in spec.layers}
    assert with_jwt == {"ApiReadFunction", AUTHORIZER_NAME}
    assert [_ref(x) for x in READER["Layers"]] == ["DepsPostgresLayer", "DepsJwtLayer"]


def test_the_read_function_runs_in_subnets_that_can_reach_the_issuer():
    vpc = READER["VpcConfig"]
    condition, given, default = vpc["SubnetIds"]["Fn::If"]
    assert condition == "HasReadSubnets"
    assert (_ref(given), _ref(default)) == ("ReadSubnetIds", "SubnetIds")
    assert vpc["SecurityGroupIds"] == [{"Ref": "FunctionSecurityGroup"}]
    parameter = PARAMETERS["ReadSubnetIds"]
    assert parameter["Type"] == "CommaDelimitedList" and parameter["Default"] == ""
    egress = RESOURCES["FunctionSecurityGroup"]["Properties"]["SecurityGroupEgress"]
    assert any(rule["FromPort"] == 443 and rule["CidrIp"] == "0.0.0.0/0" for rule in egress)


_TOKEN_PROBE = """
import json, os, sys, threading
code, shared, layers = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.path[:] = [p for p in sys.path if "site-packages" not in p]  # the stdlib only
sys.path[:0] = [code, shared, *layers]
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

key, other = (rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in "ab")
jwk = {**RSAAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "k1", "alg": "RS256"}
body = json.dumps({"keys": [jwk]}).encode()

class Issuer(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Issuer)
threading.Thread(target=server.serve_forever, daemon=True).start()
os.environ["JWT_JWKS_URL"] = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
import app

class Context:
    function_name = "ApiReadFunction"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:read"
    aws_request_id = "probe"

def read(signed_with):
    claims = {"sub": "ada", "iss": os.environ["JWT_ISSUER"], "aud": "exampleclientid",
              "exp": 4102444800}
    token = jwt.encode(claims, signed_with, algorithm="RS256", headers={"kid": "k1"})
    request = {"method": "GET", "path": "/boards", "protocol": "HTTP/1.1",
               "sourceIp": "127.0.0.1", "userAgent": "probe"}
    event = {"version": "2.0", "routeKey": "GET /boards", "rawPath": "/boards",
             "rawQueryString": "", "headers": {"authorization": f"Bearer {token}"},
             "requestContext": {"http": request, "requestId": "probe",
                                "routeKey": "GET /boards", "stage": "$default"},
             "isBase64Encoded": False}
    return app.lambda_handler(event, Context())["statusCode"]

print(json.dumps({"valid": read(key), "forged": read(other)}))
"""


@pytest.mark.slow
def test_the_read_function_verifies_an_rs256_token_with_only_its_layers(host_layers):
    """The layer's closure is complete for RS256 (cryptography's binary and its own
    dependencies): a token signed by the issuer's key gets past the check (then the stores,
    absent here, answer 503), one signed by another key is 401."""
    spec = TEMPLATE.functions["ApiReadFunction"]
    layers = [str(host_layers[layer]) for layer in spec.layers if layer in host_layers]
    layers.append(str(host_layers["DepsAwsLayer"]))  # the runtime's bundled SDK, last
    env = spec.resolved_environment({}) | {  # the template's literals (Powertools' settings)
        "PATH": os.environ.get("PATH", ""),
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "DATABASE_URL": "postgresql://u@127.0.0.1:1/db",
        "JWT_ISSUER": "https://issuer.example",
        "JWT_AUDIENCE": "exampleclientid",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "LAMBDA_TASK_ROOT": str(spec.code_dir),
    }
    args = [str(spec.code_dir), str(ROOT / "layers/shared/python"), *layers]
    result = subprocess.run(
        [sys.executable, "-I", "-c", _TOKEN_PROBE, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    answers = json.loads(result.stdout.strip().splitlines()[-1])
    assert answers == {"valid": 503, "forged": 401}, result.stderr[-2000:]


# --- period-end events: the bus, the webhook rule, queue, delivery function, DLQ and alarm ---
WEBHOOK_RESOURCES = {
    "WebhookQueue",
    "WebhookDeadLetterQueue",
    "PeriodEndedWebhookRule",
    "WebhookQueuePolicy",
    "WebhookDeliveryFunction",
    "WebhookDeliveryLogs",
    "WebhookDeadLetterAlarm",
    "WebhookDeliveryErrorsAlarm",
}


def test_the_bus_always_exists_and_the_webhook_side_only_with_a_url():
    assert RESOURCES["PeriodEventBus"]["Type"] == "AWS::Events::EventBus"
    assert "Condition" not in RESOURCES["PeriodEventBus"]
    for name in WEBHOOK_RESOURCES:
        assert RESOURCES[name].get("Condition") == "HasWebhook", name
    assert TEMPLATE.raw["Conditions"]["HasWebhook"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "WebhookUrl"}, ""]}]
    }
    url = PARAMETERS["WebhookUrl"]
    assert url["Default"] == "" and re.fullmatch(url["AllowedPattern"], "https://x.example/h")
    assert not re.fullmatch(url["AllowedPattern"], "http://x.example/h"), "signed, not encrypted"
    assert PARAMETERS["WebhookSecretArn"]["Default"] == ""
    rule = TEMPLATE.raw["Rules"]["WebhookNeedsASecret"]
    assert rule["RuleCondition"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "WebhookUrl"}, ""]}]}
    outputs = TEMPLATE.raw["Outputs"]
    assert _ref(outputs["PeriodEventBusName"]["Value"]) == "PeriodEventBus"
    assert outputs["WebhookDeadLetterQueueUrl"]["Condition"] == "HasWebhook"


def test_the_rollover_may_put_events_on_that_bus_only():
    props = FUNCTIONS["RolloverFunction"]["Properties"]
    assert _ref(props["Environment"]["Variables"]["EVENT_BUS_NAME"]) == "PeriodEventBus"
    assert "DepsAwsLayer" in TEMPLATE.functions["RolloverFunction"].layers
    granted = {}
    for name, statements in _statements():
        for statement in statements:
            if "events:" in json.dumps(statement["Action"]):
                granted[name] = statement
    assert set(granted) == {"RolloverFunction"}
    assert granted["RolloverFunction"]["Action"] == "events:PutEvents"
    assert _getatt(granted["RolloverFunction"]["Resource"]) == ("PeriodEventBus", "Arn")


def test_the_rule_forwards_period_ended_to_the_webhook_queue_and_only_it_may_send():
    rule = RESOURCES["PeriodEndedWebhookRule"]["Properties"]
    assert _ref(rule["EventBusName"]) == "PeriodEventBus"
    assert rule["EventPattern"] == {"source": ["leaderboard"], "detail-type": ["period.ended"]}
    (target,) = rule["Targets"]
    assert _getatt(target["Arn"]) == ("WebhookQueue", "Arn")
    assert _getatt(target["DeadLetterConfig"]["Arn"]) == ("WebhookDeadLetterQueue", "Arn")
    policy = RESOURCES["WebhookQueuePolicy"]["Properties"]
    assert [_ref(q) for q in policy["Queues"]] == ["WebhookQueue", "WebhookDeadLetterQueue"]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "events.amazonaws.com"}
    assert statement["Action"] == "sqs:SendMessage"
    assert _getatt(statement["Condition"]["ArnEquals"]["aws:SourceArn"]) == (
        "PeriodEndedWebhookRule",
        "Arn",
    )


def test_the_webhook_queue_redrives_to_its_dlq_and_the_dlq_alarms():
    queue = RESOURCES["WebhookQueue"]["Properties"]
    redrive = queue["RedrivePolicy"]
    assert _getatt(redrive["deadLetterTargetArn"]) == ("WebhookDeadLetterQueue", "Arn")
    assert 3 <= redrive["maxReceiveCount"] <= 10
    fn = FUNCTIONS["WebhookDeliveryFunction"]["Properties"]
    assert queue["VisibilityTimeout"] >= 6 * fn["Timeout"]
    alarm = RESOURCES["WebhookDeadLetterAlarm"]["Properties"]
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert _getatt(alarm["Dimensions"][0]["Value"]) == ("WebhookDeadLetterQueue", "QueueName")
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]


def test_the_webhook_delivery_function_has_least_privilege():
    fn = FUNCTIONS["WebhookDeliveryFunction"]["Properties"]
    (source,) = fn["Events"].values()
    assert source["Type"] == "SQS" and _getatt(source["Properties"]["Queue"]) == (
        "WebhookQueue",
        "Arn",
    )
    assert source["Properties"]["BatchSize"] == 10
    assert source["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    (policy,) = fn["Policies"]
    granted = {s["Action"]: s["Resource"] for s in policy["Statement"]}
    assert set(granted) == {
        "sqs:ChangeMessageVisibility",
        "sqs:SendMessage",
        "secretsmanager:GetSecretValue",
    }
    assert _getatt(granted["sqs:ChangeMessageVisibility"]) == ("WebhookQueue", "Arn")
    assert _getatt(granted["sqs:SendMessage"]) == ("WebhookDeadLetterQueue", "Arn")
    assert _ref(granted["secretsmanager:GetSecretValue"]) == "WebhookSecretArn"
    variables = fn["Environment"]["Variables"]
    assert _ref(variables["WEBHOOK_URL"]) == "WebhookUrl"
    assert _ref(variables["WEBHOOK_SECRET_ARN"]) == "WebhookSecretArn"
    assert _ref(variables["WEBHOOK_QUEUE_URL"]) == "WebhookQueue"
    assert _ref(variables["WEBHOOK_DLQ_URL"]) == "WebhookDeadLetterQueue"
    assert variables["WEBHOOK_SECRET"] == "", "a slot for the local stack only"
    condition, given, default = fn["VpcConfig"]["SubnetIds"]["Fn::If"]
    assert (condition, _ref(given), _ref(default)) == (
        "HasWebhookSubnets",
        "WebhookSubnetIds",
        "SubnetIds",
    )


# --- the operator console: a private bucket, its CloudFront distribution, the API's CORS -----
CONSOLE_ORIGIN = {"Fn::Sub": "https://${ConsoleDistribution.DomainName}"}
CONSOLE_RESOURCES = {
    "ConsoleBucket": "AWS::S3::Bucket",
    "ConsoleBucketPolicy": "AWS::S3::BucketPolicy",
    "ConsoleOriginAccessControl": "AWS::CloudFront::OriginAccessControl",
    "ConsoleHeadersPolicy": "AWS::CloudFront::ResponseHeadersPolicy",
    "ConsoleDistribution": "AWS::CloudFront::Distribution",
}
DISTRIBUTION = RESOURCES["ConsoleDistribution"]["Properties"]["DistributionConfig"]
HEADERS_POLICY = RESOURCES["ConsoleHeadersPolicy"]["Properties"]["ResponseHeadersPolicyConfig"]
CORS = RESOURCES["HttpApi"]["Properties"]["CorsConfiguration"]


def test_the_console_resources_exist_in_every_deployment():
    found = {n: r["Type"] for n, r in RESOURCES.items() if n.startswith("Console")}
    assert found == CONSOLE_RESOURCES
    assert not any("Condition" in RESOURCES[n] for n in CONSOLE_RESOURCES)
    kinds = {r["Type"] for r in RESOURCES.values()}
    assert "AWS::CloudFront::CloudFrontOriginAccessIdentity" not in kinds, "OAC, not the OAI"
    buckets = [n for n, r in RESOURCES.items() if r["Type"] == "AWS::S3::Bucket"]
    assert buckets == ["ConsoleBucket"]


def test_the_console_bucket_is_private_encrypted_and_has_no_acls_or_website():
    bucket = RESOURCES["ConsoleBucket"]
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    assert props["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert not {"WebsiteConfiguration", "AccessControl", "BucketName"} & set(props)
    # Files built from this repository: deleted with the stack, once emptied (deploy.md).
    assert bucket["DeletionPolicy"] == bucket["UpdateReplacePolicy"] == "Delete"
    assert "VersioningConfiguration" not in props, "emptying it before a delete stays one command"


def test_only_the_console_distribution_may_read_the_bucket_and_only_over_tls():
    policies = [r for r in RESOURCES.values() if r["Type"] == "AWS::S3::BucketPolicy"]
    assert len(policies) == 1
    props = RESOURCES["ConsoleBucketPolicy"]["Properties"]
    assert _ref(props["Bucket"]) == "ConsoleBucket"
    statements = props["PolicyDocument"]["Statement"]
    allows = [s for s in statements if s["Effect"] == "Allow"]
    (allow,) = allows
    assert allow["Principal"] == {"Service": "cloudfront.amazonaws.com"}
    assert allow["Action"] == "s3:GetObject"  # no list, no write
    assert allow["Resource"] == {"Fn::Sub": "${ConsoleBucket.Arn}/*"}
    assert allow["Condition"] == {
        "StringEquals": {
            "AWS:SourceArn": {
                "Fn::Sub": "arn:${AWS::Partition}:cloudfront::${AWS::AccountId}"
                ":distribution/${ConsoleDistribution}"
            }
        }
    }
    (deny,) = [s for s in statements if s["Effect"] == "Deny"]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert deny["Principal"] == "*" and deny["Action"] == "s3:*"
    assert len(statements) == 2


def test_the_distribution_reads_the_bucket_through_oac_and_serves_https_only():
    assert DISTRIBUTION["Enabled"] is True
    assert DISTRIBUTION["DefaultRootObject"] == "index.html"
    (origin,) = DISTRIBUTION["Origins"]
    assert _getatt(origin["DomainName"]) == ("ConsoleBucket", "RegionalDomainName")
    assert _getatt(origin["OriginAccessControlId"]) == ("ConsoleOriginAccessControl", "Id")
    assert origin["S3OriginConfig"] == {"OriginAccessIdentity": ""}, "no legacy OAI"
    oac = RESOURCES["ConsoleOriginAccessControl"]["Properties"]["OriginAccessControlConfig"]
    assert (oac["OriginAccessControlOriginType"], oac["SigningBehavior"]) == ("s3", "always")
    assert oac["SigningProtocol"] == "sigv4"
    behavior = DISTRIBUTION["DefaultCacheBehavior"]
    assert behavior["TargetOriginId"] == origin["Id"]
    assert behavior["ViewerProtocolPolicy"] in ("redirect-to-https", "https-only")
    assert behavior["AllowedMethods"] == ["GET", "HEAD"], "a static site: nothing is written"
    assert _ref(behavior["ResponseHeadersPolicyId"]) == "ConsoleHeadersPolicy"
    assert "CacheBehaviors" not in DISTRIBUTION, "one behavior, so every path gets the headers"
    assert "ForwardedValues" not in behavior and behavior["CachePolicyId"]


def _csp():
    """The console's Content-Security-Policy, directive -> sources."""
    value = HEADERS_POLICY["SecurityHeadersConfig"]["ContentSecurityPolicy"]
    directives = {}
    for part in _sub(value["ContentSecurityPolicy"]).split(";"):
        name, *sources = part.split()
        directives[name] = sources
    return value, directives


def test_the_console_headers_allow_its_own_scripts_the_api_and_the_live_endpoints_only():
    value, csp = _csp()
    assert value["Override"] is True
    assert csp["default-src"] == ["'none'"]
    assert csp["script-src"] == ["'self'"], "its own files: no inline script, no eval"
    assert csp["frame-ancestors"] == ["'none'"]
    assert csp["object-src"] == csp["base-uri"] == ["'none'"]
    assert csp["connect-src"] == [
        "'self'",  # config.json
        # Any HTTP API of the region: its exact host would make a cycle (see the next test).
        "https://*.execute-api.${AWS::Region}.${AWS::URLSuffix}",
        "https://${LiveEventApi.Dns.Http}",
        "wss://${LiveEventApi.Dns.Realtime}",
    ]
    assert not any("unsafe" in s or s in ("*", "https:", "data:") for s in csp["script-src"])
    assert all("unsafe" not in s for sources in csp.values() for s in sources)
    security = HEADERS_POLICY["SecurityHeadersConfig"]
    # The token never travels in a URL the console sends anywhere: no referrer at all.
    assert security["ReferrerPolicy"] == {"ReferrerPolicy": "no-referrer", "Override": True}
    assert security["FrameOptions"] == {"FrameOption": "DENY", "Override": True}
    assert security["ContentTypeOptions"] == {"Override": True}
    hsts = security["StrictTransportSecurity"]
    assert hsts["AccessControlMaxAgeSec"] >= 31536000 and hsts["Override"] is True


def _dependencies(raw):
    """Resource -> the resources it needs created first, as CloudFormation orders them after
    the SAM transform: Ref, GetAtt, Sub and DependsOn, the function globals on every function,
    and a function's HttpApi events turned around (the API integrates the function)."""
    resources = raw["Resources"]

    def refs(node, found):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "Ref":
                    found.add(value)
                elif key == "Fn::GetAtt":
                    found.add(_getatt({key: value})[0])
                elif key == "Fn::Sub":
                    text, variables = (value, {}) if isinstance(value, str) else value
                    names = re.findall(r"\$\{([^!}][^}]*)\}", text)
                    found.update(n.split(".")[0] for n in names if n not in variables)
                    refs(variables, found)
                else:
                    refs(value, found)
        elif isinstance(node, list):
            for item in node:
                refs(item, found)
        return found

    needs = {name: set() for name in resources}
    globals_fn = refs(raw["Globals"]["Function"], set())
    for name, res in resources.items():
        res = json.loads(json.dumps(res))
        depends = res.pop("DependsOn", [])
        needs[name] |= {depends} if isinstance(depends, str) else set(depends)
        for event in res.get("Properties", {}).get("Events", {}).values():
            if event["Type"] == "HttpApi":
                api = _ref(event["Properties"].pop("ApiId"))
                needs[api].add(name)
        needs[name] |= refs(res, set())
        if res["Type"] == "AWS::Serverless::Function":
            needs[name] |= globals_fn
    return {name: {n for n in found if n in resources} for name, found in needs.items()}


def _cycle(needs):
    """A dependency cycle, as a list of resources, or None."""
    state = {}

    def visit(name, path):
        state[name] = "open"
        for other in sorted(needs[name]):
            if state.get(other) == "open":
                return [*path[path.index(other) :], other] if other in path else [name, other]
            if other not in state and (found := visit(other, [*path, other])):
                return found
        state[name] = "done"
        return None

    for name in sorted(needs):
        if name not in state and (found := visit(name, [name])):
            return found
    return None


def test_the_console_and_the_api_make_no_dependency_cycle():
    needs = _dependencies(TEMPLATE.raw)
    assert _cycle(needs) is None
    assert "ConsoleDistribution" in needs["HttpApi"], "the CORS origin is the distribution's"
    assert needs["ConsoleDistribution"] >= {"ConsoleBucket", "ConsoleHeadersPolicy"}
    assert "LiveEventApi" in needs["ConsoleHeadersPolicy"]
    # Why connect-src names every HTTP API of the region rather than this one: its exact host
    # would close a cycle through the CORS origin.
    exact = json.loads(json.dumps(TEMPLATE.raw))
    value = exact["Resources"]["ConsoleHeadersPolicy"]["Properties"]["ResponseHeadersPolicyConfig"]
    csp = value["SecurityHeadersConfig"]["ContentSecurityPolicy"]
    csp["ContentSecurityPolicy"]["Fn::Sub"] = _sub(csp["ContentSecurityPolicy"]).replace(
        "https://*.execute-api", "https://${HttpApi}.execute-api"
    )
    assert set(_cycle(_dependencies(exact))) == {
        "HttpApi",
        "ConsoleDistribution",
        "ConsoleHeadersPolicy",
    }


def _client_headers():
    """What the JS client sets on a request, and what it reads from an answer."""
    source = "\n".join(p.read_text() for p in sorted((ROOT / "clients/js/src").glob("*.ts")))
    sent = set(re.findall(r"headers\.([A-Z][A-Za-z-]+) =", source))
    sent |= set(re.findall(r"headers\[\"([A-Za-z-]+)\"\] =", source))
    sent |= set(re.findall(r"headers: \{ \"([A-Za-z-]+)\":", source))
    read = set(re.findall(r"headers\.get\(\"([a-z-]+)\"\)", source))
    return {h.lower() for h in sent}, read


def test_the_api_allows_exactly_the_console_origin_and_what_the_client_sends():
    assert CORS["AllowOrigins"] == [CONSOLE_ORIGIN], "the console's origin, and no other"
    assert "*" not in json.dumps(CORS)
    assert not CORS.get("AllowCredentials"), "tokens go in Authorization, never in cookies"
    sent, read = _client_headers()
    assert sent == {"authorization", "content-type", "idempotency-key"}
    assert set(CORS["AllowHeaders"]) == sent
    assert read == {"retry-after", "idempotent-replayed"}
    assert set(CORS["ExposeHeaders"]) == read
    methods = {route.method for route in TEMPLATE.routes}
    assert set(CORS["AllowMethods"]) == methods | {"OPTIONS"}
    assert 0 < CORS["MaxAge"] <= 7200  # browsers cap it at 2 hours (Chromium)


def test_the_console_outputs_and_its_sign_in_parameter():
    outputs = TEMPLATE.raw["Outputs"]
    assert outputs["ConsoleUrl"]["Value"] == {
        "Fn::Sub": "https://${ConsoleDistribution.DomainName}/"
    }
    assert _ref(outputs["ConsoleBucketName"]["Value"]) == "ConsoleBucket"
    assert _ref(outputs["ConsoleDistributionId"]["Value"]) == "ConsoleDistribution"
    assert not any("Condition" in outputs[n] for n in outputs if n.startswith("Console"))
    parameter = PARAMETERS["ConsoleSignInUrl"]
    assert (parameter["Type"], parameter["Default"]) == ("String", "")
    pattern = re.compile(parameter["AllowedPattern"])
    assert pattern.fullmatch("") and pattern.fullmatch("https://auth.example.com/login?x=1")
    for refused in ("http://auth.example.com/login", "javascript:alert(1)", "//auth.example"):
        assert not pattern.fullmatch(refused), refused
    interface = TEMPLATE.raw["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
    (group,) = [g for g in interface if "ConsoleSignInUrl" in g["Parameters"]]
    assert group["Parameters"] == ["ConsoleSignInUrl"]


def test_every_output_is_named_in_deploy_md():
    deploy = (ROOT / "docs/deploy.md").read_text()
    for name in TEMPLATE.raw["Outputs"]:
        assert f"`{name}`" in deploy, f"{name} is missing from deploy.md"


def test_make_test_keeps_sam_validate_lint():
    """The template's lint (cfn-lint through `sam validate --lint`, offline) is `make validate`,
    a step of `make test`; it also finds dependency cycles (E3004)."""
    makefile = (ROOT / "Makefile").read_text()
    validate = re.search(r"^validate:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert validate and "sam validate --lint" in validate.group(1)
    steps = re.search(r"^test-steps:.*\n\t(.*)\n", makefile, re.MULTILINE)
    assert steps and "validate" in steps.group(1).split()
