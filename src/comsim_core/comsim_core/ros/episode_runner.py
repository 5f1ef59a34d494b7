"""Unattended recording: reset the lab, start the recorder, let the scripted expert demonstrate,
check success, close the episode; repeat for each task.

Talks to the other nodes only through their ROS interfaces (parameters and services), so the same
runner drives a real lab whose reset is a person pressing a button, given such a service.
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import rclpy
from rcl_interfaces.srv import SetParameters
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import String
from std_srvs.srv import Trigger

from comsim_core.episodes.layout import find_episodes
from comsim_core.episodes.meta import EpisodeMeta
from comsim_core.episodes.sidecar import counts_as_success, read_sidecar
from comsim_core.ros.messages import LATCHED_QOS
from comsim_core.ros.params import declare_parameters
from comsim_core.ros.run import run_node

DEFAULTS = {
    'tasks': ['stack_blocks', 'move_card', 'shake_bottle'],
    'episodes_per_task': 5,
    'region': 'id',
    'variant': '',
    'seed': 0,
    'operator': 'scripted-expert',
    'episode_timeout_s': 40.0,
    'settle_s': 0.5,
    'lab_node': 'bench_lab',
    'recorder_node': 'recorder',
    'teleop_node': 'teleop',
}


@dataclass
class EpisodeResult:
    task: str
    seed: int
    success: bool
    path: str
    summary: dict
    message: str = ''


# The bench lab stands in for the real lab: what its cameras film is the "real" data.
LAB_SOURCE = 'real'


class RunnerError(RuntimeError):
    pass


class EpisodeRunner(Node):
    def __init__(self, **overrides):
        super().__init__('episode_runner', parameter_overrides=[
            Parameter(k, value=v) for k, v in overrides.items()])
        self.p = declare_parameters(self, DEFAULTS)
        self.teleop_state = None
        self.create_subscription(String, f'/{self.p.teleop_node}/status', self._on_teleop,
                                 LATCHED_QOS)

    def _on_teleop(self, msg):
        self.teleop_state = json.loads(msg.data).get('state')

    # -- plumbing -----------------------------------------------------------------------------
    def _call(self, srv_type, name, request, timeout=30.0):
        client = self.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise RunnerError(f'service {name} not available after {timeout:.0f} s')
            future = client.call_async(request)
            rclpy.spin_until_future_complete(self, future, timeout_sec=timeout)
            if not future.done():
                raise RunnerError(f'service {name} did not answer within {timeout:.0f} s')
            return future.result()
        finally:
            self.destroy_client(client)

    def trigger(self, name, must_succeed=True) -> str:
        resp = self._call(Trigger, name, Trigger.Request())
        if must_succeed and not resp.success:
            raise RunnerError(f'{name} failed: {resp.message}')
        return resp.success, resp.message

    def set_params(self, node, **values):
        req = SetParameters.Request(parameters=[Parameter(k, value=v).to_parameter_msg()
                                                for k, v in values.items()])
        resp = self._call(SetParameters, f'/{node}/set_parameters', req)
        bad = [r.reason for r in resp.results if not r.successful]
        if bad:
            raise RunnerError(f'setting {values} on /{node} failed: {bad}')

    def label_episode(self, recorder_node: str, meta: EpisodeMeta) -> None:
        """Tell the recorder what the next episode is (its metadata parameters)."""
        self.set_params(recorder_node, **meta.to_params())

    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def wait_sim(self, seconds: float, until=None, wall_cap: float = 600.0) -> bool:
        """Spin for `seconds` of this node's clock (sim time under use_sim_time) or until
        `until()` holds; False on timeout."""
        t_end = self.now() + seconds
        wall_end = time.monotonic() + wall_cap
        while self.now() < t_end and time.monotonic() < wall_end:
            rclpy.spin_once(self, timeout_sec=0.05)
            if until is not None and until():
                return True
        return until is None

    # -- one episode --------------------------------------------------------------------------
    def run_episode(self, task: str, seed: int) -> EpisodeResult:
        lab, rec, tel = self.p.lab_node, self.p.recorder_node, self.p.teleop_node
        self.set_params(lab, task=task, seed=seed, region=self.p.region, variant=self.p.variant)
        self.trigger(f'/{lab}/reset')
        self.label_episode(rec, EpisodeMeta(task=task, seed=seed, region=self.p.region,
                                            variant=self.p.variant, source=LAB_SOURCE,
                                            operator=self.p.operator))
        self.wait_sim(self.p.settle_s)
        self.trigger(f'/{rec}/start')
        self.teleop_state = None
        self.trigger(f'/{tel}/start_scripted')
        finished = self.wait_sim(self.p.episode_timeout_s,
                                 until=lambda: self.teleop_state == 'done')
        self.wait_sim(self.p.settle_s)
        success, why = self.trigger(f'/{lab}/check_success', must_succeed=False)
        if not finished:
            why = f'expert did not finish within {self.p.episode_timeout_s} s; {why}'
            success = False
        _, summary = self.trigger(f'/{rec}/stop_{"success" if success else "failure"}')
        summary = json.loads(summary)
        return EpisodeResult(task, seed, bool(success), summary.get('path', ''), summary, why)

    def run_all(self, log=print, done: Mapping[tuple[str, int], EpisodeResult] | None = None
                ) -> list[EpisodeResult]:
        """Every episode of the plan (``recording_plan``); those in ``done`` (a resumed session:
        ``recorded_episodes`` of its output folder) are not recorded again."""
        results = []
        for task, seed in recording_plan(self.p.tasks, int(self.p.episodes_per_task),
                                         int(self.p.seed)):
            if done and (task, seed) in done:
                results.append(done[task, seed])
                continue
            t0 = time.monotonic()
            result = self.run_episode(task, seed)
            log(f'{task} seed={seed}: {"success" if result.success else "failure"} '
                f'({result.message}) {time.monotonic() - t0:.1f} s wall -> {result.path}')
            results.append(result)
        return results


def recording_plan(tasks: Sequence[str], per_task: int, seed: int) -> list[tuple[str, int]]:
    """(task, layout seed) of every episode a session records: seeds count up from ``seed``
    across the tasks in order, so the same settings give the same layouts."""
    return [(task, seed + i * per_task + k) for i, task in enumerate(tasks)
            for k in range(per_task)]


def recorded_episodes(folder: Path) -> dict[tuple[str, int], EpisodeResult]:
    """The episodes an earlier session closed in ``folder`` (status ``complete``, failed ones
    included: their layout was recorded), by (task, seed), so a resumed session records only
    the rest of its plan."""
    done = {}
    for path in find_episodes(folder, complete_only=True) if Path(folder).is_dir() else []:
        side = read_sidecar(path) or {}
        meta = side.get('metadata') or {}
        if 'task' in meta and meta.get('seed') is not None:
            done[str(meta['task']), int(meta['seed'])] = EpisodeResult(
                str(meta['task']), int(meta['seed']), counts_as_success(side), str(path), side,
                str(side.get('notes') or ''))
    return done


def _record(node: EpisodeRunner) -> int:
    results = node.run_all(lambda s: node.get_logger().info(s))
    ok = sum(r.success for r in results)
    node.get_logger().info(f'{ok}/{len(results)} successful episodes')
    return 0


def main(args=None):
    return run_node(EpisodeRunner, args, work=_record)


if __name__ == '__main__':
    sys.exit(main())
