"""ComSim's ROS-free core: episodes, robot model, tasks, cameras, configs, reports."""
import os

# MuJoCo chooses its GL backend when it is first imported, here or in a spawned worker: without
# this, a machine with no display (CI, a GPU box over ssh) fails in every renderer, deep inside
# a worker process. EGL renders headless on a GPU or Mesa; set MUJOCO_GL to choose another.
os.environ.setdefault('MUJOCO_GL', 'egl')
if os.environ['MUJOCO_GL'] in ('egl', 'osmesa'):
    os.environ.setdefault('PYOPENGL_PLATFORM', os.environ['MUJOCO_GL'])
