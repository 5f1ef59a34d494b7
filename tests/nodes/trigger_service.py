"""Calling a node's std_srvs/Trigger service from a test node, as an operator's tool would."""
from __future__ import annotations

from std_srvs.srv import Trigger


def call(node, name, spin_until):
    """`name`'s response; fails the test if the service does not appear or answer in time."""
    client = node.create_client(Trigger, name)
    assert client.wait_for_service(timeout_sec=15), name
    future = client.call_async(Trigger.Request())
    assert spin_until(node, future.done, 30), name
    return future.result()
