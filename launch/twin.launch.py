"""The digital twin's cameras: replay a recorded episode, or mirror the live arm.

    ros2 launch comsim_bringup twin.launch.py     # what config/twin.yaml says (mode, bag, scene)
    comsim-launch launch/twin.launch.py           # the same graph without ros2 launch

`NODES` is the one description of the graph; `comsim-launch` reads it where `launch` is not
installed (pip installs), `generate_launch_description` where it is.
"""
from comsim_core.paths import config_dir
from comsim_core.ros.graph import COMMON_ARGUMENTS, launch_description

CONFIG = config_dir()   # share/comsim_bringup/config on a ROS install, else the checkout's

NODES = [
    {'package': 'comsim_twin', 'executable': 'comsim-twin', 'name': 'twin',
     'params': ['twin.yaml']},
]
ARGUMENTS = {
    'use_sim_time': ('true', 'the twin on /clock (the bench lab publishes it; false when it '
                     'mirrors a real arm)'),
    **COMMON_ARGUMENTS,
}


def generate_launch_description():
    return launch_description(NODES, CONFIG, ARGUMENTS)
