"""The local SQS endpoint (devstack.sqs_server): the calls it answers straight from moto's model
must answer as moto's own application does, and everything else must still reach moto."""

from __future__ import annotations

import json
import threading
import uuid

import pytest
from botocore.exceptions import ClientError

ATTRIBUTES = {"type": {"DataType": "String", "StringValue": "score_submitted"}}


@pytest.fixture
def client(sqs):
    return sqs.client()


@pytest.fixture
def queue(sqs):
    return sqs.create_queue(f"q-{uuid.uuid4().hex[:8]}", dlq_name=f"d-{uuid.uuid4().hex[:8]}")


def _shape(message):
    return {
        "Body": message["Body"],
        "MD5OfBody": message["MD5OfBody"],
        "MD5OfMessageAttributes": message.get("MD5OfMessageAttributes"),
        "MessageAttributes": message.get("MessageAttributes"),
        "Attributes": sorted(message.get("Attributes", {})),
    }


def test_fast_and_moto_paths_answer_alike(client, queue):
    fast = client.send_message(QueueUrl=queue, MessageBody="one", MessageAttributes=ATTRIBUTES)
    # DelaySeconds is left to moto's own application
    slow = client.send_message(
        QueueUrl=queue, MessageBody="one", MessageAttributes=ATTRIBUTES, DelaySeconds=0
    )
    assert fast["MD5OfMessageBody"] == slow["MD5OfMessageBody"]
    assert fast["MD5OfMessageAttributes"] == slow["MD5OfMessageAttributes"]
    got = client.receive_message(
        QueueUrl=queue,
        MaxNumberOfMessages=10,
        AttributeNames=["All"],
        MessageAttributeNames=["All"],
    )["Messages"]
    assert len(got) == 2
    assert _shape(got[0]) == _shape(got[1])
    assert _shape(got[0])["Attributes"] == [
        "ApproximateFirstReceiveTimestamp",
        "ApproximateReceiveCount",
        "SenderId",
        "SentTimestamp",
    ]


def test_long_poll_wakes_when_a_message_arrives(client, queue):
    received = []

    def poll():
        received.append(client.receive_message(QueueUrl=queue, WaitTimeSeconds=10))

    thread = threading.Thread(target=poll)
    thread.start()
    threading.Event().wait(0.3)
    client.send_message(QueueUrl=queue, MessageBody="late")
    thread.join(15)
    assert [m["Body"] for m in received[0]["Messages"]] == ["late"]


def test_queue_depth_counts_waiting_and_in_flight(client, queue):
    for n in range(5):
        client.send_message(QueueUrl=queue, MessageBody=str(n))
    client.receive_message(QueueUrl=queue, MaxNumberOfMessages=2)
    attributes = client.get_queue_attributes(
        QueueUrl=queue,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    assert attributes == {
        "ApproximateNumberOfMessages": "3",
        "ApproximateNumberOfMessagesNotVisible": "2",
    }


def test_delete_batch_reports_bad_handles_and_accepts_repeats(client, queue):
    for n in range(3):
        client.send_message(QueueUrl=queue, MessageBody=str(n))
    got = client.receive_message(QueueUrl=queue, MaxNumberOfMessages=3)["Messages"]
    entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
    first = client.delete_message_batch(
        QueueUrl=queue, Entries=[*entries[:2], {"Id": "bad", "ReceiptHandle": "not-a-handle"}]
    )
    assert sorted(s["Id"] for s in first["Successful"]) == ["0", "1"]
    assert [(f["Id"], f["Code"]) for f in first["Failed"]] == [("bad", "ReceiptHandleIsInvalid")]
    again = client.delete_message_batch(QueueUrl=queue, Entries=entries)  # 0 and 1 twice
    assert sorted(s["Id"] for s in again["Successful"]) == ["0", "1", "2"]
    depth = client.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])["Attributes"]
    assert depth["ApproximateNumberOfMessages"] == depth["ApproximateNumberOfMessagesNotVisible"]
    assert depth["ApproximateNumberOfMessages"] == "0"
    with pytest.raises(ClientError, match=r"BatchEntryIdsNotDistinct|ReceiptHandle"):
        client.delete_message_batch(QueueUrl=queue, Entries=[entries[0], entries[0]])


def test_redrive_to_the_dead_letter_queue_through_the_fast_receive(sqs, client):
    name = f"r-{uuid.uuid4().hex[:8]}"
    url = sqs.create_queue(name, dlq_name=name + "-dlq", max_receive_count=1)
    client.send_message(QueueUrl=url, MessageBody=json.dumps({"n": 1}))
    assert client.receive_message(QueueUrl=url, VisibilityTimeout=0)["Messages"]
    assert "Messages" not in client.receive_message(QueueUrl=url)
    dlq = client.get_queue_url(QueueName=name + "-dlq")["QueueUrl"]
    assert [m["Body"] for m in client.receive_message(QueueUrl=dlq)["Messages"]] == ['{"n": 1}']


def test_errors_are_moto_s_own(client, queue):
    with pytest.raises(ClientError, match=r"NonExistentQueue|QueueDoesNotExist"):
        client.receive_message(QueueUrl=queue + "-missing")
    with pytest.raises(ClientError, match="MaxNumberOfMessages"):
        client.receive_message(QueueUrl=queue, MaxNumberOfMessages=11)


def test_delays_still_take_moto_s_own_send(client, queue):
    """A standard-queue send skips moto's FIFO-only check; a delayed one is moto's own."""
    client.send_message(QueueUrl=queue, MessageBody="now")
    client.send_message(QueueUrl=queue, MessageBody="later", DelaySeconds=30)
    got = client.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in got] == ["now"]
    attributes = client.get_queue_attributes(
        QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    assert attributes == {"ApproximateNumberOfMessagesDelayed": "1"}


def test_the_local_queue_remembers_only_recent_deleted_receipt_handles() -> None:
    """moto kept every deleted message's receipt handles forever (the soak saw ~4 MB per
    thousand messages); the local server keeps the most recent ones only."""
    from devstack.sqs_server import RecentHandles, patch_moto

    handles = RecentHandles(limit=3)
    handles.update(["a", "b", "c"])
    handles.add("d")
    assert list(handles) == ["b", "c", "d"] and "a" not in handles and "d" in handles
    handles.discard("c")
    assert len(handles) == 2

    patch_moto()
    import moto.sqs.models as models

    queue = models.Queue("bounded", "us-east-1", "123456789012")
    assert isinstance(queue.deleted_messages, RecentHandles)
