"""Run a node process the same way everywhere: init, spin, stop cleanly on Ctrl-C or SIGTERM.

A node's optional `close()` runs before it is destroyed, so recorders and simulators finish
their work (close the episode, stop the sim thread) whatever ended the process. A user mistake
(a params file that does not parse or has no section for the node, a misspelt or mistyped
parameter, a bad checkpoint) gets the console scripts' one line and exit code 2
(`comsim_core.errors`); `--debug` or `COMSIM_DEBUG=1` keeps the traceback.
"""
from __future__ import annotations

import faulthandler
import gc
import os
import re
import signal
import sys
from collections.abc import Callable

import rclpy
from rclpy.clock import Clock, ClockType
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node

from comsim_core.errors import EXIT_USAGE, UserError, debug_requested, user_message
from comsim_core.ros.params import params_files_of

CLOCK_WAIT_S = 5.0      # wall seconds a node on sim time waits for /clock before it warns
TEARDOWN_S = 20         # wall seconds a stopping node may take before it is ended by force


def warn_without_clock(node: Node, wait_s: float = CLOCK_WAIT_S):
    """On sim time with no /clock yet after ``wait_s`` wall seconds, say so once: timers on
    the node's clock never fire and stamps read zero, which looks like a hang, not a setting."""
    if not (node.has_parameter('use_sim_time') and node.get_parameter('use_sim_time').value):
        return None
    timer = None

    def check() -> None:
        timer.cancel()
        if node.get_clock().now().nanoseconds == 0:
            node.get_logger().warning(
                f'use_sim_time is true but no /clock has arrived in {wait_s:g} s: start the '
                'simulator (the bench lab publishes /clock), or set use_sim_time:=false on a '
                'real arm (a launch argument of every ComSim launch file)')

    timer = node.create_timer(wait_s, check, clock=Clock(clock_type=ClockType.STEADY_TIME))
    return timer


def bound_teardown(seconds: int | None = None) -> None:
    """From here the process ends within ``seconds``: past them faulthandler writes every
    thread's stack to stderr (the node's log) and exits, and SIGALRM, whose default action
    ends the process, backs it up through interpreter finalisation and C++ static
    destructors, where no Python code runs. A node told to stop (SIGTERM from a dying
    launcher, Ctrl-C) must not outlive that: it would keep the arm's topics."""
    seconds = TEARDOWN_S if seconds is None else seconds
    faulthandler.dump_traceback_later(seconds, exit=True)
    if hasattr(signal, 'alarm'):
        signal.alarm(seconds + 5)


class NodeStartupError(UserError):
    """A node that cannot start (bad checkpoint, missing input): exit code 2, no traceback."""


def _init(args) -> None:
    """rclpy.init, with rcl's parse errors (`--ros-args` typos) as one UserError line."""
    try:
        rclpy.init(args=args)
    except Exception as exc:  # rclpy's errors live in a private pybind module
        if type(exc).__name__ == 'UnknownROSArgsError':
            raise UserError(f'unknown --ros-args {exc}') from exc
        if type(exc).__name__ != 'RCLError':
            raise
        text = re.sub(r',? at /\S+:\d+', '', str(exc)).removeprefix('failed to initialize rcl: ')
        raise UserError(f'bad --ros-args: {text}') from exc


def run_node(make_node: Callable[[], Node], args=None, threads: int = 1,
             work: Callable[[Node], int | None] | None = None) -> int:
    """Create the node, spin it until shutdown (or run `work(node)`, for a node that does a job
    and ends, such as the episode runner); returns the process exit code. It owns the process:
    once the node stops, the process ends within ``TEARDOWN_S`` (``bound_teardown``); after a
    user mistake's one line it ends at once, with exit code 2."""
    argv = sys.argv if args is None else args
    prog = os.path.basename(argv[0]) if argv else 'node'
    node = None
    initialised = started = False
    code = 0
    try:
        with params_files_of(argv):
            _init(args)
            initialised = True
            node = make_node()
        started = True
        warn_without_clock(node)
        if work is not None:
            code = int(work(node) or 0)
        else:
            executor = (MultiThreadedExecutor(num_threads=threads) if threads > 1
                        else SingleThreadedExecutor())
            executor.add_node(node)
            executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as exc:
        if initialised and not rclpy.ok() and not isinstance(exc, UserError):
            return code     # stopped by a signal while starting: rcl calls fail on the shut context
        # Once running, only a UserError is the user's: a missing file in a callback is a bug.
        message = user_message(exc) if not started or isinstance(exc, UserError) else None
        if message is None or debug_requested(argv):
            raise
        print(f'{prog}: error: {message}', file=sys.stderr, flush=True)
        code = EXIT_USAGE
        if node is None:
            # The constructor refused its input: nothing ran, nothing to save. A half-built
            # node's rcl handles, freed by gc.collect() or at rclpy.shutdown(), crashed the
            # process (SIGSEGV instead of exit code 2) under load twice, the second time
            # after they were collected before the shutdown; end before any of that teardown.
            sys.stdout.flush()
            os._exit(code)
    finally:
        bound_teardown()
        if node is not None:
            close = getattr(node, 'close', None)
            if callable(close):
                close()
            node.destroy_node()
        else:
            # A node whose constructor raised (not the user's mistake: a bug, raised on) is
            # half built and, through its callbacks, in a reference cycle: freed now, while the
            # context lives, not at exit after shutdown, where its handles' teardown can crash.
            gc.collect()
        if rclpy.ok():
            rclpy.shutdown()
    if code == EXIT_USAGE:
        # Said and cleaned up: end now. Interpreter finalisation (torch, DDS destructors) can
        # outlast the teardown bound on a loaded machine, and the bound's exit code (1) would
        # hide the user's mistake behind a watchdog dump.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
