"""Translate a sim episode into pseudo-real frames with a trained neural simulator.

    ros2 launch launch/translate.launch.py           # params in config/translate.yaml
    comsim-launch launch/translate.launch.py         # the same graph without ros2 launch

`NODES` is the one description of the graph; `comsim-launch` reads it where `launch` is not
installed (pip installs), `generate_launch_description` where it is.
"""
from pathlib import Path

CONFIG = Path(__file__).resolve().parent.parent / 'config'

NODES = [
    {'package': 'comsim_neural_sim', 'executable': 'comsim-neural-sim-translate',
     'name': 'translate', 'params': ['translate.yaml']},
]
ARGUMENTS = {
    'use_sim_time': ('false', 'the translate node on /clock (it publishes on its own timer)'),
}


def generate_launch_description():
    from comsim_core.ros.graph import launch_description
    return launch_description(NODES, CONFIG, ARGUMENTS)
