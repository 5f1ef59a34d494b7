"""Recording benchmark.

Live: 2 cameras 640x480 rgb8 @ 30 Hz + joint states @ 500 Hz + commands @ 100 Hz for
`--duration` s, each publisher its own process over DDS, recorded by the real recorder node in
another process: drops, achieved rates vs nominal, recorder CPU share.
Offline: the recorder's write path (EpisodeRecorder) vs `rosbags` writing the same messages
directly, in this process, same disk: throughput ratio.

    .venv/bin/python bench/record_throughput.py --duration 60 [--out out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import rclpy
import yaml
from provenance import add_out_argument, machine, write_result
from rclpy.node import Node
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from std_srvs.srv import Trigger

from comsim_core.episodes.reader import Episode
from comsim_core.episodes.topics import TopicSpec
from comsim_core.ros.graph import find_executable
from comsim_teleop.recording import EpisodeRecorder

HERE = Path(__file__).resolve().parent
STREAMS = [
    ('camera', '/cameras/front/image_raw', 'sensor_msgs/msg/Image', 30.0),
    ('camera', '/cameras/side/image_raw', 'sensor_msgs/msg/Image', 30.0),
    ('joints', '/joint_states', 'sensor_msgs/msg/JointState', 500.0),
    ('commands', '/joint_trajectory_controller/joint_trajectory',
     'trajectory_msgs/msg/JointTrajectory', 100.0),
]


def cpu_seconds(pid: int) -> float:
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def call(node: Node, name: str, timeout=20.0) -> Trigger.Response:
    client = node.create_client(Trigger, name)
    if not client.wait_for_service(timeout_sec=timeout):
        raise RuntimeError(f'{name} not available')
    future = client.call_async(Trigger.Request())
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    return future.result()


def live(duration: float, work: Path) -> tuple[dict, Path]:
    params = work / 'recorder.yaml'
    params.write_text(yaml.safe_dump({'recorder': {'ros__parameters': {
        'output_dir': str(work / 'episodes'), 'storage': 'mcap', 'min_free_mb': 100,
        'topics': [f'{t} {m} {r:g}' for _, t, m, r in STREAMS], 'queue_size': 4000}}}))
    rec = subprocess.Popen([find_executable('comsim-recorder'), '--ros-args', '--params-file',
                            str(params)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    rclpy.init()
    node = Node('bench_control')
    try:
        call(node, '/recorder/start')
        pubs = [subprocess.Popen([sys.executable, str(HERE / 'publishers.py'), kind, topic,
                                  str(rate), str(duration), '--start-delay', '1']
                                 + (['--reliable'] if kind == 'camera' else []),
                                 stdout=subprocess.PIPE, text=True)
                for kind, topic, _, rate in STREAMS]
        cpu0, t0 = cpu_seconds(rec.pid), time.monotonic()
        for p in pubs:
            p.wait()
        cpu1, t1 = cpu_seconds(rec.pid), time.monotonic()
        resp = call(node, '/recorder/stop_success', timeout=60.0)
        summary = json.loads(resp.message)
    finally:
        node.destroy_node()
        rclpy.shutdown()
        rec.send_signal(2)
        rec.wait(timeout=30)
    result = {'cpu_share_of_one_core': (cpu1 - cpu0) / (t1 - t0), 'streams': {}}
    for _, topic, _, rate in STREAMS:
        s = summary['streams'][topic]
        expected = int(round(rate * duration))
        result['streams'][topic] = {
            'expected': expected, 'recorded': s['count'], 'queue_drops': s['dropped'],
            'missed_in_gaps': s['missed_estimate'], 'rate_hz': s['rate_hz'],
            'rate_error_pct': 100 * (s['rate_hz'] - rate) / rate, 'max_gap_s': s['max_gap_s']}
    return result, Path(summary['path'])


def offline(bag: Path, work: Path, repeats: int = 3) -> dict:
    """Same messages, same disk: recorder write path vs rosbags Writer directly.

    Each timed run starts after `os.sync()` and the order alternates, because the kernel's
    write-back of the previous run's dirty pages otherwise slows whichever run comes next (we
    saw 0.6 s vs 1.7 s for the same 550 MB written twice in a row).
    """
    with Episode.open(bag) as ep:
        conns = {c.topic: c.msgtype for c in ep._reader.connections}
        msgs = [(c.topic, t, bytes(raw)) for c, t, raw in ep._reader.messages()]
    total = sum(len(raw) for *_, raw in msgs)
    typestore = get_typestore(Stores.ROS2_KILTED)

    def direct(path):
        with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
            handles = {t: w.add_connection(t, m, typestore=typestore) for t, m in conns.items()}
            for topic, t, raw in msgs:
                w.write(handles[topic], t, raw)

    def recorder(path):
        rec = EpisodeRecorder(path, [TopicSpec(t, m, None) for t, m in conns.items()],
                              queue_size=len(msgs) + 10, min_free_bytes=0)
        rec.start({'task': 'bench'})
        for topic, t, raw in msgs:
            rec.on_message(topic, raw, t)
        assert rec.stop(True).total_dropped == 0

    times = {'direct': [], 'recorder': []}
    for i in range(repeats):
        order = [('direct', direct), ('recorder', recorder)]
        for name, fn in (order if i % 2 == 0 else order[::-1]):
            path = work / f'{name}_{i}'
            os.sync()
            t0 = time.perf_counter()
            fn(path)
            times[name].append(time.perf_counter() - t0)
            shutil.rmtree(path)
    best_direct, best_rec = min(times['direct']), min(times['recorder'])
    return {'bytes': total, 'messages': len(msgs), 'runs_s': times,
            'rosbags_direct_MBps': total / best_direct / 1e6,
            'recorder_MBps': total / best_rec / 1e6,
            'ratio_recorder_to_direct': best_direct / best_rec}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--duration', type=float, default=60.0)
    parser.add_argument('--work', type=Path)
    add_out_argument(parser, __file__)
    args = parser.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix='comsim_bench_'))
    work.mkdir(parents=True, exist_ok=True)
    try:
        result, bag = live(args.duration, work)
        result['offline'] = offline(bag, work)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))
    write_result(args.out, result, machine())


if __name__ == '__main__':
    main()
