"""`comsim-launch` stops its nodes on SIGTERM (docker stop, systemd) as on Ctrl-C: a node left
running after its launcher is gone keeps the arm's command topics and the bag open."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def children(pid: int) -> list[int]:
    out = []
    for stat in Path('/proc').glob('[0-9]*/stat'):
        try:
            fields = stat.read_text().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f'/proc/{pid}/stat')
    return stat.exists() and stat.read_text().rsplit(')', 1)[1].split()[0] != 'Z'


def diagnosis(pids: list[int], log_dir: Path) -> str:
    """What a node left running was doing: its state and kernel wait, and every node's log
    (a node past its teardown bound writes its threads' stacks there)."""
    lines = []
    for pid in pids:
        for name in ('cmdline', 'wchan'):
            try:
                lines.append(f'{pid} {name}: ' + Path(f'/proc/{pid}/{name}').read_text()
                             .replace('\0', ' '))
            except OSError:
                pass
        try:
            lines += [f'{pid} {ln}' for ln in Path(f'/proc/{pid}/status').read_text()
                      .splitlines() if ln.startswith(('State', 'Threads', 'Sig'))]
        except OSError:
            pass
    for log in sorted(log_dir.glob('*.log')):
        lines += [f'--- {log.name}', log.read_text(errors='replace')[-3000:]]
    return '\n'.join(lines)


@contextmanager
def record_graph(tmp_path, domain: int):
    """`comsim-launch record.launch.py bench_lab:=false`, its nodes up and spinning: yields
    (launcher, node pids); whatever a failed test leaves running is killed."""
    env = {**os.environ, 'ROS_DOMAIN_ID': str(domain)}
    proc = subprocess.Popen([sys.executable, '-m', 'comsim_core.ros.graph',
                             str(ROOT / 'launch' / 'record.launch.py'), 'bench_lab:=false',
                             '--log-dir', str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
    nodes = []
    try:
        assert 'started teleop, recorder' in proc.stdout.readline()
        deadline = time.monotonic() + 60
        while len(children(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        nodes = children(proc.pid)
        assert len(nodes) >= 2
        time.sleep(2.0)                      # the nodes are up and spinning
        yield proc, nodes
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in nodes:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.ros
def test_sigterm_stops_every_node_of_the_graph(tmp_path):
    with record_graph(tmp_path, 150 + os.getpid() % 50) as (proc, nodes):
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        assert 'stopped:' in out
        assert not [pid for pid in nodes if alive(pid)]


@pytest.mark.ros
def test_the_nodes_stop_when_the_launcher_is_killed(tmp_path):
    """SIGKILL (the OOM killer, `kill -9`) gives the launcher no chance to stop its nodes:
    they get SIGTERM from the kernel when it dies, and stop as they do on SIGTERM."""
    with record_graph(tmp_path, 100 + os.getpid() % 50) as (proc, nodes):
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in nodes) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [pid for pid in nodes if alive(pid)]
        assert not left, diagnosis(left, tmp_path)
