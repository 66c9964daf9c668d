"""The runners' object-store policies (deploy/policies): enforced by moto's S3 server with its IAM checks on.

moto's server checks IAM policies only when started with `INITIAL_NO_AUTH_ACTION_COUNT` (the first N
requests are let through unauthenticated: here the setup, creating the bucket, a trajectory object, the
runner's IAM user, its policy and its key). So each test module starts a moto server process of its own
(the session's `s3_endpoint` server checks nothing). MinIO cannot run here (SPEC section 9): its document
(same policy language) is enforced by moto the same way, and its content is checked below.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from minio import Minio
from minio.error import S3Error

from common.blob_keys import BLOB_PREFIX, blob_key
from common.blobs import WriteOnlyS3
from common.polling import free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]
POLICIES = {"minio": ROOT / "deploy/policies/runner-blobs.minio.json",
            "iam": ROOT / "deploy/policies/runner-blobs.iam.json"}
#: Unauthenticated requests moto lets through before it checks every request: the setup of `runner_key`.
SETUP_REQUESTS = 6


def bucket_of(document: dict[str, Any]) -> str:
    """The bucket the policy's Allow statement names (`arn:aws:s3:::BUCKET/_blobs/*`)."""
    (allow,) = [s for s in document["Statement"] if s["Effect"] == "Allow"]
    (resource,) = allow["Resource"]
    return resource.removeprefix("arn:aws:s3:::").split("/", 1)[0]


@pytest.fixture(scope="module", params=sorted(POLICIES))
def runner_key(request: pytest.FixtureRequest) -> Iterator[tuple[str, str, dict[str, str], str]]:
    """(endpoint, bucket, the runner's key {"id", "secret"}, a trajectory object's key) on a moto server that
    enforces IAM, with the policy document of `request.param` attached to the runner's IAM user."""
    port = free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(SETUP_REQUESTS)}
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        endpoint = f"127.0.0.1:{port}"

        def up() -> bool:
            try:
                import urllib.request
                urllib.request.urlopen(f"http://{endpoint}/moto-api/", timeout=1).close()  # not an AWS action
                return True
            except OSError:
                return False

        wait_until(up, 90, "moto's server to answer", interval_s=0.1)  # imports take long on a loaded machine
        document = json.loads(POLICIES[request.param].read_text())
        bucket = bucket_of(document)
        admin: dict[str, Any] = {"endpoint_url": f"http://{endpoint}", "region_name": "us-east-1",
                                 "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        s3, iam = boto3.client("s3", **admin), boto3.client("iam", **admin)
        s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key="run-1/task-a_0/image_0000.png", Body=b"a trajectory's screenshot")
        iam.create_user(UserName="runner")
        iam.put_user_policy(UserName="runner", PolicyName="runner-blobs", PolicyDocument=json.dumps(document))
        created = iam.create_access_key(UserName="runner")["AccessKey"]
        yield endpoint, bucket, {"id": created["AccessKeyId"], "secret": created["SecretAccessKey"]}, \
            "run-1/task-a_0/image_0000.png"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_runners_key_puts_blobs_with_the_write_only_client(runner_key: tuple) -> None:
    endpoint, bucket, key, _ = runner_key
    writer = WriteOnlyS3(bucket, endpoint, key["id"], key["secret"])
    data = b"\x89PNG a screenshot"
    writer.put(blob_key(data), data, "image/png")  # no HeadBucket, no GetBucketLocation: PutObject alone
    writer.put(blob_key(data), data, "image/png")  # a re-put of the same bytes is allowed too (idempotent)


def test_the_runners_key_can_neither_read_list_delete_nor_write_elsewhere(runner_key: tuple) -> None:
    endpoint, bucket, key, trajectory_object = runner_key
    client = Minio(endpoint, access_key=key["id"], secret_key=key["secret"], secure=False, region="us-east-1")
    blob = blob_key(b"x")
    client.put_object(bucket, blob, io.BytesIO(b"x"), 1)  # the one thing allowed
    refused: dict[str, Callable[[], Any]] = {
        "get a blob": lambda: client.get_object(bucket, blob).read(),
        "get a trajectory": lambda: client.get_object(bucket, trajectory_object).read(),
        "head": lambda: client.stat_object(bucket, blob),
        "list": lambda: list(client.list_objects(bucket, prefix=f"{BLOB_PREFIX}/", recursive=True)),
        "list the bucket": lambda: list(client.list_objects(bucket, recursive=True)),
        "delete a blob": lambda: client.remove_object(bucket, blob),
        "delete a trajectory": lambda: client.remove_object(bucket, trajectory_object),
        "overwrite a trajectory": lambda: client.put_object(bucket, trajectory_object, io.BytesIO(b"evil"), 4),
        "put outside _blobs": lambda: client.put_object(bucket, "_dead_letters/x.png", io.BytesIO(b"x"), 1),
        "check the bucket": lambda: client.bucket_exists(bucket),
    }
    outcomes = {}
    for what, call in refused.items():
        try:
            call()
            outcomes[what] = "allowed"
        except S3Error as exc:
            outcomes[what] = exc.code
    assert outcomes == dict.fromkeys(refused, "AccessDenied") | {"check the bucket": outcomes["check the bucket"]}
    assert outcomes["check the bucket"] != "allowed"  # HeadBucket: a 403 without an error body (code varies)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_each_document_allows_putobject_on_the_blob_prefix_alone(name: str) -> None:
    """What MinIO would enforce (it runs no here): one Allow, of `s3:PutObject`, on `{bucket}/_blobs/*`; any
    other statement is a Deny."""
    document = json.loads(POLICIES[name].read_text())
    assert document["Version"] == "2012-10-17"
    allows = [s for s in document["Statement"] if s["Effect"] == "Allow"]
    assert [(s["Action"], s["Resource"]) for s in allows] == [
        (["s3:PutObject"], [f"arn:aws:s3:::{bucket_of(document)}/{BLOB_PREFIX}/*"])]
    assert all(s["Effect"] in ("Allow", "Deny") for s in document["Statement"])
    assert not any("Principal" in s or "Condition" in s for s in allows)
