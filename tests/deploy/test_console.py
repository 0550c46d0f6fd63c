"""`make console-deploy` (deploy/console.py) against moto's S3, CloudFront and CloudFormation:
the console's files and the built client go up under the right keys with the right content
types, config.json is written from the stack's outputs, nothing from outside those two folders
is uploaded, what the bucket held beyond them is deleted, and the distribution is invalidated."""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from deploy import console

ROOT = Path(__file__).resolve().parents[2]
API_URL = "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/dev"
SIGN_IN = "https://auth.example.com/oauth2/authorize?client_id=abc&response_type=token"
SECRET = b"AWS_SECRET_ACCESS_KEY=never-upload-me"

# A stack with the outputs the template gives (the bucket made by the stack, as there).
STACK_TEMPLATE = {
    "Parameters": {
        "ConsoleSignInUrl": {"Type": "String", "Default": ""},
        "LivePublishRate": {"Type": "Number", "Default": 4},
        "DistributionId": {"Type": "String"},
    },
    "Resources": {"ConsoleBucket": {"Type": "AWS::S3::Bucket"}},
    "Outputs": {
        "ApiUrl": {"Value": API_URL},
        "ConsoleBucketName": {"Value": {"Ref": "ConsoleBucket"}},
        "ConsoleDistributionId": {"Value": {"Ref": "DistributionId"}},
        "ConsoleUrl": {"Value": "https://d111111abcdef8.cloudfront.net/"},
        "LiveRealtimeUrl": {
            "Value": "wss://abcd.appsync-realtime-api.us-east-1.amazonaws.com/event/realtime"
        },
        "LiveHttpUrl": {"Value": "https://abcd.appsync-api.us-east-1.amazonaws.com/event"},
        "LiveApiKey": {"Value": "da2-examplekey"},
        "LiveNamespace": {"Value": "leaderboards"},
    },
}
EXPECTED_KEYS = {
    "index.html",
    "app.js",
    "console.css",
    "img/logo.svg",
    "config.json",
    "client/leaderboard.js",
    "client/client.js",
    "client/live.js",
}


@pytest.fixture
def repo(tmp_path):
    """A console and a built client, with what must never go up beside and around them."""
    page, dist = tmp_path / "console", tmp_path / "clients/js/dist"
    (page / "img").mkdir(parents=True)
    dist.mkdir(parents=True)
    (page / "index.html").write_text('<script type="module" src="./app.js"></script>')
    (page / "app.js").write_text('import { LeaderboardClient } from "./client/leaderboard.js";')
    (page / "console.css").write_text("body { margin: 0 }")
    (page / "img/logo.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    (page / "config.json").write_text('{"api_url": "http://127.0.0.1:3000"}')  # a local one
    (page / "README.md").write_text("notes")
    (page / ".env").write_bytes(SECRET)
    (page / ".git").mkdir()
    (page / ".git/config.js").write_bytes(SECRET)
    (tmp_path / "secret.js").write_bytes(SECRET)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/keys.js").write_bytes(SECRET)
    os.symlink(tmp_path / "secret.js", page / "linked.js")  # a link out of the folder
    os.symlink(tmp_path / "outside", page / "linked-dir")
    for name in ("leaderboard", "client", "live"):
        (dist / f"{name}.js").write_text(f"export const {name} = 1;")
        (dist / f"{name}.d.ts").write_text(f"export declare const {name}: number;")
    (dist / ".built").write_text("")
    return tmp_path


@pytest.fixture(scope="module")
def aws():
    """moto's S3, CloudFront and CloudFormation for the module (their clients are slow to
    make); each test makes a stack of its own."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
            patch.delenv(name, raising=False)
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        patch.setenv("AWS_ACCESS_KEY_ID", "testing")
        patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        with mock_aws():
            yield {
                name: boto3.client(name, region_name="us-east-1")
                for name in ("cloudformation", "s3", "cloudfront")
            }


@pytest.fixture
def stack(request):
    """This test's stack name."""
    return f"leaderboard-{re.sub(r'[^a-z0-9]+', '-', request.node.name[5:])[:100]}"


_REFERENCES = itertools.count()


def _distribution(cloudfront):
    config = {
        "CallerReference": f"console-{next(_REFERENCES)}",
        "Comment": "",
        "Enabled": True,
        "Origins": {
            "Quantity": 1,
            "Items": [
                {
                    "Id": "console-bucket",
                    "DomainName": "bucket.s3.us-east-1.amazonaws.com",
                    "S3OriginConfig": {"OriginAccessIdentity": ""},
                }
            ],
        },
        "DefaultCacheBehavior": {
            "TargetOriginId": "console-bucket",
            "ViewerProtocolPolicy": "redirect-to-https",
        },
    }
    return cloudfront.create_distribution(DistributionConfig=config)["Distribution"]["Id"]


def _stack(aws, name, sign_in=""):
    """The stack, its bucket and its distribution: (bucket name, distribution id)."""
    distribution = _distribution(aws["cloudfront"])
    aws["cloudformation"].create_stack(
        StackName=name,
        TemplateBody=json.dumps(STACK_TEMPLATE),
        Parameters=[
            {"ParameterKey": "ConsoleSignInUrl", "ParameterValue": sign_in},
            {"ParameterKey": "DistributionId", "ParameterValue": distribution},
        ],
    )
    (made,) = aws["cloudformation"].describe_stacks(StackName=name)["Stacks"]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in made["Outputs"]}
    return outputs["ConsoleBucketName"], distribution


def _objects(s3, bucket):
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    return {key: s3.get_object(Bucket=bucket, Key=key) for key in keys}


def _deploy(aws, repo, name, **kwargs):
    return console.deploy(
        aws["cloudformation"],
        aws["s3"],
        aws["cloudfront"],
        name,
        console_dir=repo / "console",
        client_dir=repo / "clients/js/dist",
        **kwargs,
    )


def test_it_uploads_the_console_and_the_client_with_their_content_types(aws, repo, stack):
    bucket, _ = _stack(aws, stack, sign_in=SIGN_IN)
    report = _deploy(aws, repo, stack)
    objects = _objects(aws["s3"], bucket)
    assert set(objects) == EXPECTED_KEYS
    assert report.bucket == bucket and set(report.uploaded) == EXPECTED_KEYS
    types = {key: found["ContentType"] for key, found in objects.items()}
    assert types == {
        "index.html": "text/html; charset=utf-8",
        "app.js": "text/javascript; charset=utf-8",  # a module script needs a JS type
        "console.css": "text/css; charset=utf-8",
        "img/logo.svg": "image/svg+xml",
        "config.json": "application/json",
        "client/leaderboard.js": "text/javascript; charset=utf-8",
        "client/client.js": "text/javascript; charset=utf-8",
        "client/live.js": "text/javascript; charset=utf-8",
    }
    assert {found["CacheControl"] for found in objects.values()} == {"no-cache"}
    for key, found in objects.items():
        if key == "config.json":
            continue
        source = repo / "clients/js/dist" / key.removeprefix("client/")
        if not key.startswith("client/"):
            source = repo / "console" / key
        assert found["Body"].read() == source.read_bytes(), key
    assert report.url == "https://d111111abcdef8.cloudfront.net/"


def test_config_json_is_written_from_the_stack_not_taken_from_the_folder(aws, repo, stack):
    bucket, _ = _stack(aws, stack, sign_in=SIGN_IN)
    _deploy(aws, repo, stack)
    config = json.loads(aws["s3"].get_object(Bucket=bucket, Key="config.json")["Body"].read())
    assert config == {
        "api_url": API_URL,
        "sign_in_url": SIGN_IN,
        # the local stack's shape (devstack live_config): what a subscriber needs
        "live": {
            "realtime_url": "wss://abcd.appsync-realtime-api.us-east-1.amazonaws.com/event/realtime",
            "http_host": "abcd.appsync-api.us-east-1.amazonaws.com",
            "api_key": "da2-examplekey",
            "namespace": "leaderboards",
            "publish_rate": "4",
        },
    }


def test_without_a_sign_in_url_the_config_says_none(aws, repo, stack):
    bucket, _ = _stack(aws, stack)
    _deploy(aws, repo, stack)
    config = json.loads(aws["s3"].get_object(Bucket=bucket, Key="config.json")["Body"].read())
    assert config["sign_in_url"] is None


def test_nothing_outside_the_console_and_the_clients_dist_goes_up(aws, repo, stack):
    bucket, _ = _stack(aws, stack)
    report = _deploy(aws, repo, stack)
    bodies = [found["Body"].read() for found in _objects(aws["s3"], bucket).values()]
    assert not any(SECRET in body for body in bodies)
    assert not any(key.endswith((".d.ts", ".md", ".built", ".env")) for key in report.uploaded)
    assert not any("linked" in key for key in report.uploaded)
    assert {"console/README.md", "console/linked.js"} <= set(report.skipped)
    assert any(path.startswith("console/config.json") for path in report.skipped)


def test_it_invalidates_the_distribution(aws, repo, stack):
    _, distribution = _stack(aws, stack)
    report = _deploy(aws, repo, stack)
    listing = aws["cloudfront"].list_invalidations(DistributionId=distribution)["InvalidationList"]
    (made,) = listing["Items"]
    assert report.invalidation == made["Id"]
    batch = aws["cloudfront"].get_invalidation(DistributionId=distribution, Id=made["Id"])
    assert batch["Invalidation"]["InvalidationBatch"]["Paths"] == {"Quantity": 1, "Items": ["/*"]}


def test_what_is_no_longer_part_of_the_console_is_deleted(aws, repo, stack):
    bucket, _ = _stack(aws, stack)
    aws["s3"].put_object(Bucket=bucket, Key="old-page.js", Body=b"stale")
    aws["s3"].put_object(Bucket=bucket, Key="client/removed.js", Body=b"stale")
    report = _deploy(aws, repo, stack)
    assert set(report.deleted) == {"old-page.js", "client/removed.js"}
    assert set(_objects(aws["s3"], bucket)) == EXPECTED_KEYS
    assert _deploy(aws, repo, stack).deleted == ()  # a second deploy finds nothing stale


def test_the_page_goes_up_last_after_the_modules_it_imports(repo):
    uploads, _ = console.planned_uploads(
        {"api_url": API_URL}, repo / "console", repo / "clients/js/dist"
    )
    keys = [u.key for u in uploads]
    assert keys[-2:] == ["config.json", "index.html"]
    assert keys.index("client/leaderboard.js") < keys.index("app.js")


def test_a_dry_run_changes_nothing(aws, repo, stack):
    bucket, distribution = _stack(aws, stack)
    report = _deploy(aws, repo, stack, dry_run=True)
    assert set(report.uploaded) == EXPECTED_KEYS
    assert report.invalidation is None
    assert _objects(aws["s3"], bucket) == {}
    listing = aws["cloudfront"].list_invalidations(DistributionId=distribution)["InvalidationList"]
    assert listing["Quantity"] == 0


def test_a_stack_without_the_console_outputs_is_refused_before_anything_is_touched(
    aws, repo, stack
):
    template = json.loads(json.dumps(STACK_TEMPLATE))
    for name in ("ConsoleBucketName", "ConsoleDistributionId", "ConsoleUrl"):
        del template["Outputs"][name]
    del template["Parameters"]["DistributionId"]
    aws["cloudformation"].create_stack(StackName=stack, TemplateBody=json.dumps(template))
    with pytest.raises(console.ConsoleDeployError, match="ConsoleBucketName, ConsoleDistri"):
        _deploy(aws, repo, stack)
    with pytest.raises(console.ConsoleDeployError, match="cannot read stack 'nope'"):
        console.deploy(aws["cloudformation"], aws["s3"], aws["cloudfront"], "nope")


def test_a_console_without_its_page_or_an_unbuilt_client_is_refused(aws, repo, stack):
    bucket, _ = _stack(aws, stack)
    (repo / "clients/js/dist/leaderboard.js").unlink()
    with pytest.raises(console.ConsoleDeployError, match="run make js-client"):
        _deploy(aws, repo, stack)
    (repo / "console/index.html").unlink()
    with pytest.raises(console.ConsoleDeployError, match=r"no index\.html"):
        _deploy(aws, repo, stack)
    assert _objects(aws["s3"], bucket) == {}


def test_the_stack_name_comes_from_samconfig():
    assert console.stack_name() == "leaderboard-dev"
    assert console.stack_name("prod") == "leaderboard-prod"
    with pytest.raises(console.ConsoleDeployError, match="staging"):
        console.stack_name("staging")


def test_main_deploys_the_named_stack_and_says_where_the_console_is(
    aws, repo, stack, monkeypatch, capsys
):
    _stack(aws, stack)
    monkeypatch.setattr(console, "CONSOLE_DIR", repo / "console")
    monkeypatch.setattr(console, "CLIENT_DIR", repo / "clients/js/dist")
    assert console.main(["--stack", stack]) == 0
    out = capsys.readouterr().out
    assert "uploaded 8 files" in out and "console: https://d111111abcdef8.cloudfront.net/" in out
    assert console.main(["--stack", "missing"]) == 1
    assert "cannot read stack 'missing'" in capsys.readouterr().err


def test_make_console_deploy_builds_the_client_first_and_runs_this_script():
    makefile = (ROOT / "Makefile").read_text()
    found = re.search(r"^console-deploy:(.*)\n\t(.*)", makefile, re.MULTILINE)
    assert found and "js-client" in found.group(1).split()
    assert "-m deploy.console" in found.group(2)
