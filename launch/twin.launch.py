"""The digital twin's cameras: replay a recorded episode, or mirror the live arm.

    ros2 launch launch/twin.launch.py       # what config/twin.yaml says (mode, bag, scene)
    comsim-launch launch/twin.launch.py     # the same graph without ros2 launch

`NODES` is the one description of the graph; `comsim-launch` reads it where `launch` is not
installed (pip installs), `generate_launch_description` where it is.
"""
from pathlib import Path

CONFIG = Path(__file__).resolve().parent.parent / 'config'

NODES = [
    {'package': 'comsim_twin', 'executable': 'comsim-twin', 'name': 'twin',
     'params': ['twin.yaml']},
]
ARGUMENTS = {
    'use_sim_time': ('true', 'the twin on /clock (the bench lab publishes it; false when it '
                     'mirrors a real arm)'),
}


def generate_launch_description():
    from comsim_core.ros.graph import launch_description
    return launch_description(NODES, CONFIG, ARGUMENTS)
