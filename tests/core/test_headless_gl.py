"""A fresh process on a machine without a display renders without being told how: a spawned
evaluation worker once died in MuJoCo's GL set-up (GLFW, no DISPLAY) when MUJOCO_GL was unset."""
from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
from comsim_bench_lab.sim_env import BenchLabEnvironment
env = BenchLabEnvironment({})
env.reset('move_card', 1000, 'id', '')
rgb = env.render(env.camera_topics[0])
print(rgb.shape, int(rgb.std() > 1))
env.close()
"""


def test_a_process_without_display_or_gl_settings_renders():
    env = {k: v for k, v in os.environ.items()
           if k not in ('MUJOCO_GL', 'PYOPENGL_PLATFORM', 'DISPLAY', 'WAYLAND_DISPLAY')}
    out = subprocess.run([sys.executable, '-c', SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split('\n')[0] == '(240, 320, 3) 1'
