"""Run a node process the same way everywhere: init, spin, stop cleanly on Ctrl-C or SIGTERM.

A node's optional `close()` runs before it is destroyed, so recorders and simulators finish
their work (close the episode, stop the sim thread) whatever ended the process.
"""
from __future__ import annotations

import sys
from collections.abc import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node

from comsim_teleop.errors import UserError


class NodeStartupError(UserError):
    """A node that cannot start (bad checkpoint, missing input): exit code 2, no traceback."""


def run_node(make_node: Callable[[], Node], args=None, threads: int = 1) -> int:
    """Create the node, spin it until shutdown; returns the process exit code."""
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = make_node()
        executor = (MultiThreadedExecutor(num_threads=threads) if threads > 1
                    else SingleThreadedExecutor())
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except NodeStartupError as exc:
        print(f'{exc}', file=sys.stderr, flush=True)
        code = 2
    finally:
        if node is not None:
            close = getattr(node, 'close', None)
            if callable(close):
                close()
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return code
