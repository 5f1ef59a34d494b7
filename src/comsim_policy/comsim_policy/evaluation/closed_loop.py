"""Closed-loop evaluation: checkpoints × tasks × regions/variants on the bench lab, over DDS.

Each checkpoint gets its own graph from `launch/deploy.launch.py` (bench lab, policy node,
recorder), each a process, talking over ROS exactly as on a real arm. Every rollout resets the
lab to a fresh random layout (the same seeds for every checkpoint, so comparisons are paired),
enables the policy, polls `/bench_lab/check_success` until success or a sim-time timeout, and
records the rollout as an episode bag. The result is a success table with counts
(`results.Evaluation`, shared with the in-process evaluator).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import rclpy
from std_msgs.msg import String
from std_srvs.srv import SetBool

from comsim_core import paths
from comsim_core.episodes.meta import EpisodeMeta
from comsim_core.ros.episode_runner import LAB_SOURCE, EpisodeRunner, RunnerError
from comsim_core.ros.graph import Graph, NodeSpec, find_executable, graph_from_launch
from comsim_core.ros.messages import LATCHED_QOS
from comsim_policy.evaluation.results import Evaluation, Rollout, checkpoint_names

DEPLOY_LAUNCH = 'deploy.launch.py'   # shipped, found by comsim_core.paths
CAMERAS = ['/cameras/front/image_raw', '/cameras/side/image_raw']
RECORDED_TOPICS = [
    '/joint_states sensor_msgs/msg/JointState 200',
    '/cameras/front/image_raw sensor_msgs/msg/Image',
    '/cameras/side/image_raw sensor_msgs/msg/Image',
    '/joint_trajectory_controller/joint_trajectory trajectory_msgs/msg/JointTrajectory',
    '/forward_position_controller/commands std_msgs/msg/Float64MultiArray',
]
# Console scripts and their modules, for checkouts where a script is not registered yet.
MODULES = {'comsim-policy': 'comsim_policy.nodes.policy_node'}


class EvaluationError(RuntimeError):
    """The evaluation graph could not run (a node died, a service never came up)."""


class _ModuleSpec(NodeSpec):
    """A node started as `python -m module` (its console script is not installed)."""

    module: str = ''

    def command(self) -> list[str]:
        return [sys.executable, '-m', self.module, *self.ros_args()]


def deploy_graph(checkpoint: Path, out_dir: Path, lab: dict | None = None,
                 policy: dict | None = None, launch_file: Path | None = None,
                 record: bool = True) -> list[NodeSpec]:
    """Node specs of the deploy graph (recording into `out_dir`) for one checkpoint."""
    launch_file = launch_file or paths.launch_file(DEPLOY_LAUNCH)
    topics = '[' + ', '.join(f"'{t}'" for t in RECORDED_TOPICS) + ']'
    overrides = {
        'bench_lab': {k: str(v) for k, v in (lab or {}).items()},
        'policy': {'checkpoint': str(checkpoint), 'start_enabled': 'false',
                   **{k: str(v) for k, v in (policy or {}).items()}},
    }
    if record:
        overrides['recorder'] = {'output_dir': str(out_dir), 'topics': topics}
    specs = graph_from_launch(launch_file, {'record': str(record).lower()}, overrides)
    for i, spec in enumerate(specs):
        if find_executable(spec.executable) is None and spec.executable in MODULES:
            specs[i] = _ModuleSpec(spec.package, spec.executable, spec.name, spec.params,
                                   spec.overrides, spec.namespace)
            specs[i].module = MODULES[spec.executable]
    return specs


class EvalClient(EpisodeRunner):
    """The evaluator's ROS side: services and parameters of the lab, policy and recorder."""

    def __init__(self):
        super().__init__(use_sim_time=True)
        self.policy_status: dict = {}
        self.create_subscription(String, '/policy/status',
                                 lambda m: self.policy_status.update(json.loads(m.data)),
                                 LATCHED_QOS)

    def enable_policy(self, on: bool) -> None:
        resp = self._call(SetBool, '/policy/enable', SetBool.Request(data=on))
        if not resp.success:
            raise RunnerError(f'/policy/enable {on}: {resp.message}')


def wait_ready(client: EvalClient, graph: Graph, timeout: float) -> None:
    """Until the policy has checked its checkpoint against the lab (or a node died)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        graph.check_alive()
        rclpy.spin_once(client, timeout_sec=0.1)
        if client.policy_status.get('checked'):
            return
    raise EvaluationError(f'policy not ready after {timeout:.0f} s: {client.policy_status} '
                          f'(logs in {graph.log_dir})')


def _rollout(client: EvalClient, graph: Graph, name: str, task: str, region: str, variant: str,
             seed: int, timeout_s: float, settle_s: float, check_every_s: float) -> Rollout:
    wall0 = time.monotonic()
    client.set_params('bench_lab', task=task, seed=seed, region=region, variant=variant)
    client.trigger('/bench_lab/reset')
    client.label_episode('recorder', EpisodeMeta(task=task, seed=seed, region=region,
                                                 variant=variant, source=LAB_SOURCE,
                                                 operator=f'policy:{name}'))
    client.wait_sim(settle_s)
    client.trigger('/recorder/start')
    client.enable_policy(True)
    t0 = client.now()
    success, why = False, ''
    try:
        while client.now() - t0 < timeout_s:
            client.wait_sim(check_every_s)
            graph.check_alive()
            success, why = client.trigger('/bench_lab/check_success', must_succeed=False)
            if success:
                break
        else:
            why = f'timeout after {timeout_s:g} sim s; {why}'
    finally:
        client.enable_policy(False)
    sim_s = client.now() - t0
    _, summary = client.trigger(f'/recorder/stop_{"success" if success else "failure"}')
    bag = json.loads(summary).get('path', '')
    return Rollout(name, task, region, variant, seed, bool(success), why, round(sim_s, 2),
                   round(time.monotonic() - wall0, 1), bag)


def evaluate(checkpoint_dirs, tasks, n_rollouts: int, regions=('id', 'ood'), variants=('',),
             out_dir='output/evaluation', *, seed: int = 0, timeout_s: float = 40.0,
             settle_s: float = 0.5, check_every_s: float = 1.0, sheets: int = 2,
             lab: dict | None = None, policy: dict | None = None,
             ready_timeout_s: float = 180.0, log=print) -> Evaluation:
    """Roll every checkpoint out `n_rollouts` times per task × region × variant.

    Rollout k of every combination uses lab seed `seed + k`. Bags go to
    `out_dir/<checkpoint>/episodes`, contact sheets of the first `sheets` rollouts per
    combination to `out_dir/<checkpoint>/sheets`, the table to `out_dir/results.json`.
    """
    from comsim_core.report.episodes import contact_sheet
    from comsim_core.report.images import save_png

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    result = Evaluation()
    names = checkpoint_names([Path(c) for c in checkpoint_dirs])
    for ckpt, name in names.items():
        specs = deploy_graph(ckpt.resolve(), out_dir / name / 'episodes', lab, policy)
        with Graph(specs, log_dir=out_dir / name / 'logs') as graph:
            if not rclpy.ok():
                rclpy.init()
            client = EvalClient()
            try:
                wait_ready(client, graph, ready_timeout_s)
                for task in tasks:
                    for region in regions:
                        for variant in variants:
                            for k in range(int(n_rollouts)):
                                r = _rollout(client, graph, name, task, region, variant,
                                             seed + k, timeout_s, settle_s, check_every_s)
                                if k < sheets and r.bag:
                                    png = out_dir / name / 'sheets' / f'{Path(r.bag).name}.png'
                                    r.sheet = str(save_png(png, contact_sheet(Path(r.bag),
                                                                              CAMERAS, 6)))
                                log(f'{name} {task} {region} {variant or "default"} '
                                    f'seed={r.seed}: {"success" if r.success else "failure"} '
                                    f'({r.message}) {r.sim_s} sim s, {r.wall_s} wall s')
                                result.rollouts.append(r)
            finally:
                client.destroy_node()
                rclpy.shutdown()
    result.save(out_dir / 'results.json')
    return result

