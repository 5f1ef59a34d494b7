"""Translate a sim episode into pseudo-real frames with a trained neural simulator.

    ros2 launch comsim_bringup translate.launch.py         # params in config/translate.yaml
    comsim-launch launch/translate.launch.py               # the same graph without ros2 launch

`NODES` is the one description of the graph; `comsim-launch` reads it where `launch` is not
installed (pip installs), `generate_launch_description` where it is.
"""
from comsim_core.paths import config_dir
from comsim_core.ros.graph import COMMON_ARGUMENTS, launch_description

CONFIG = config_dir()   # share/comsim_bringup/config on a ROS install, else the checkout's

NODES = [
    {'package': 'comsim_neural_sim', 'executable': 'comsim-neural-sim-translate',
     'name': 'translate', 'params': ['translate.yaml']},
]
ARGUMENTS = {
    'use_sim_time': ('false', 'the translate node on /clock (it publishes on its own timer)'),
    **COMMON_ARGUMENTS,
}


def generate_launch_description():
    return launch_description(NODES, CONFIG, ARGUMENTS)
