"""rclpy 9.1.2's deprecated Logger.warn() wraps warning(), so throttled warn() calls from different
lines count as one call site and the second raises ValueError: the policy node crashed on its
first stale hold that way. Nodes use warning(); this keeps it so."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import rclpy
from rclpy.node import Node

SRC = Path(__file__).resolve().parents[2] / 'src'


def test_no_node_calls_the_deprecated_warn():
    offenders = [f'{p.relative_to(SRC)}:{i}' for p in SRC.rglob('*.py')
                 for i, line in enumerate(p.read_text().splitlines(), 1)
                 if re.search(r'get_logger\(\)\s*\.\s*warn\(', line)]
    assert not offenders, f'use get_logger().warning(): {offenders}'


@pytest.mark.ros
def test_throttled_warnings_with_different_throttles_on_one_node():
    rclpy.init()
    try:
        node = Node('throttle_probe')
        for _ in range(3):
            node.get_logger().warning('first', throttle_duration_sec=2.0)
            node.get_logger().warning('second', throttle_duration_sec=5.0)
        node.destroy_node()
    finally:
        rclpy.shutdown()
