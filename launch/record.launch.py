"""Record episodes: bench lab (or your arm driver and cameras), teleop and recorder.

    ros2 launch comsim_bringup record.launch.py                   # bench lab, scripted teleop
    ros2 launch comsim_bringup record.launch.py bench_lab:=false  # your arm driver (wall time)
    ros2 launch comsim_bringup record.launch.py unattended:=true  # scripted episodes, no operator
    ros2 launch comsim_bringup record.launch.py --show-args       # every argument, described
    comsim-launch record.launch.py                        # the same graph without ros2 launch

`NODES` is the one description of the graph; `comsim-launch` reads it where `launch` is not
installed (pip installs), `generate_launch_description` where it is.
"""
from comsim_core.paths import config_dir
from comsim_core.ros.graph import COMMON_ARGUMENTS, launch_description

CONFIG = config_dir()   # share/comsim_bringup/config on a ROS install, else the checkout's

NODES = [
    {'package': 'comsim_bench_lab', 'executable': 'comsim-bench-lab', 'name': 'bench_lab',
     'params': ['bench_lab.yaml'], 'condition': 'bench_lab'},
    {'package': 'comsim_teleop', 'executable': 'comsim-teleop', 'name': 'teleop',
     'params': ['teleop.yaml'], 'from_arguments': {'robot_model': 'robot_description'}},
    {'package': 'comsim_teleop', 'executable': 'comsim-recorder', 'name': 'recorder',
     'params': ['recorder.yaml']},
    {'package': 'comsim_core', 'executable': 'comsim-episode-runner', 'name': 'episode_runner',
     'params': ['episode_runner.yaml'], 'condition': 'unattended'},
]
ARGUMENTS = {
    'bench_lab': ('true', 'start the bench lab (false: your arm driver and cameras run)'),
    'unattended': ('false', 'start the episode runner: scripted episodes, no operator'),
    'use_sim_time': ('$(var bench_lab)', 'every node on /clock (default: when the bench lab '
                     'runs; false on a real arm)'),
    **COMMON_ARGUMENTS,
    'robot_description': ('', "URDF or MJCF file of your arm, the teleop's robot model (joint "
                          "and velocity limits); empty: teleop.yaml's robot_model ('' there: "
                          'the ComSim arm)'),
}


def generate_launch_description():
    return launch_description(NODES, CONFIG, ARGUMENTS)
