"""A node on sim time with no /clock says so (timers on its clock would never fire and stamps
read zero: on a real arm with a forgotten use_sim_time that looks like a hang)."""
import time

import pytest

pytestmark = pytest.mark.ros


def wait_for(path, text, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in path.read_text():
            return True
        time.sleep(0.2)
    return False


def test_sim_time_without_clock_warns_once_and_wall_time_does_not(start_node, tmp_path):
    sim = start_node('comsim-recorder', 'rec_sim', {'use_sim_time': True,
                                                    'output_dir': str(tmp_path / 'a')})
    wall = start_node('comsim-recorder', 'rec_wall', {'use_sim_time': False,
                                                      'output_dir': str(tmp_path / 'b')})
    assert wait_for(sim.log_path, 'no /clock has arrived in 5 s', 60), \
        sim.log_path.read_text()[-2000:]
    assert 'use_sim_time:=false on a real arm' in sim.log_path.read_text()
    time.sleep(1.0)
    assert wall.poll() is None and 'no /clock' not in wall.log_path.read_text()
    assert sim.log_path.read_text().count('no /clock') == 1
