"""Closed-loop timing of the policy node on the bench lab over DDS (each node its own process).

    .venv/bin/python bench/policy_closed_loop.py [--checkpoint DIR] [--duration 20] [--out out.json]

Measures, while the policy drives the arm: the achieved control rate (actions executed per sim
second, a chunk's actions counting until the next chunk replaces them), the observation-to-
command latency (command received minus the observation stamp it was computed from, in sim
time: the lab's clock, on which the policy's latency costs it) and wall-clock inference latency
(/diagnostics).
Without --checkpoint an untrained checkpoint of the default (CPU-sized) PolicyConfig is used:
timing does not depend on the weights.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from provenance import add_out_argument, machine, write_result
from trajectory_msgs.msg import JointTrajectory

from comsim_core.ros.graph import Graph
from comsim_core.ros.messages import COMMAND_QOS, time_to_sec
from comsim_policy.evaluation.closed_loop import CAMERAS, EvalClient, deploy_graph, wait_ready


def default_checkpoint(path: Path) -> Path:
    from comsim_policy.checkpoint import save_pretrained
    from comsim_policy.config import PolicyConfig
    from comsim_policy.model.policy import DiffusionPolicyModel

    config = PolicyConfig(camera_topics=CAMERAS, camera_sizes={c: [240, 320] for c in CAMERAS})
    return save_pretrained(DiffusionPolicyModel(config), path)


def stats(xs) -> dict:
    xs = np.asarray(xs, float)
    if not len(xs):
        return {'n': 0}
    return {'n': int(len(xs)), 'median': round(float(np.median(xs)), 1),
            'p95': round(float(np.percentile(xs, 95)), 1), 'max': round(float(xs.max()), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--checkpoint', type=Path)
    parser.add_argument('--duration', type=float, default=20.0, help='sim seconds enabled')
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--camera-rate', type=float, default=30.0)
    add_out_argument(parser, __file__)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix='policy_bench_'))
    ckpt = args.checkpoint or default_checkpoint(tmp / 'default_untrained')
    specs = deploy_graph(ckpt.resolve(), tmp / 'episodes', lab={'camera_rate_hz':
                                                                  args.camera_rate},
                         policy={'device': args.device}, record=False)
    chunks: list[dict] = []
    diag: dict = {}
    with Graph(specs, log_dir=tmp / 'logs') as graph:
        rclpy.init()
        client = EvalClient()

        def on_chunk(msg: JointTrajectory):
            if len(msg.points) < 2:
                return  # a hold, not a chunk
            stamp = time_to_sec(msg.header.stamp)
            chunks.append({'wall': time.monotonic(), 'sim': client.now(), 'stamp': stamp,
                           'times': [stamp + time_to_sec(p.time_from_start)
                                     for p in msg.points]})
        client.create_subscription(JointTrajectory, '/joint_trajectory_controller/joint_trajectory',
                                   on_chunk, COMMAND_QOS)

        def on_diag(msg: DiagnosticArray):
            for s in msg.status:
                if s.hardware_id == 'policy':
                    diag.update({kv.key: kv.value for kv in s.values})
        client.create_subscription(DiagnosticArray, '/diagnostics', on_diag, 10)
        try:
            wait_ready(client, graph, 180.0)
            client.enable_policy(True)
            wall0, sim0 = time.monotonic(), client.now()
            client.wait_sim(args.duration, wall_cap=600.0)
            wall1, sim1 = time.monotonic(), client.now()
            client.wait_sim(0.0)
            client.wait_sim(1.0, wall_cap=3.0)  # one more diagnostics message
            client.enable_policy(False)
        finally:
            client.destroy_node()
            rclpy.shutdown()

    executed = 0
    for a, b in zip(chunks, chunks[1:] + [None]):
        until = b['sim'] if b is not None else sim1
        executed += sum(1 for t in a['times'] if a['sim'] <= t < until)
    latency_sim = [1e3 * (c['sim'] - c['stamp']) for c in chunks]
    sim_span = sim1 - sim0
    result = {
        'checkpoint': str(args.checkpoint) if args.checkpoint else 'default PolicyConfig, '
                                                                   'untrained weights',
        'device': args.device, 'sim_s': round(sim_span, 2), 'wall_s': round(wall1 - wall0, 1),
        'real_time_factor': round(sim_span / max(wall1 - wall0, 1e-9), 3),
        'chunks': len(chunks),
        'target_control_rate_hz': float(diag.get('target_control_rate_hz', 'nan')),
        'achieved_control_rate_hz_sim': round(executed / max(sim_span, 1e-9), 2),
        'achieved_chunk_rate_hz_sim': round(len(chunks) / max(sim_span, 1e-9), 3),
        'obs_to_command_ms_sim': stats(latency_sim),
        'diagnostics': diag,
    }
    print(json.dumps(result, indent=2))
    write_result(args.out, result, machine())


if __name__ == '__main__':
    main()
