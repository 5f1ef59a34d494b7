"""Record episodes: bench lab (or your arm driver and cameras), teleop and recorder.

    ros2 launch comsim_bringup record.launch.py                   # bench lab, scripted teleop
    ros2 launch comsim_bringup record.launch.py bench_lab:=false  # your arm driver (wall time)
    ros2 launch comsim_bringup record.launch.py unattended:=true  # scripted episodes, no operator
    ros2 launch comsim_bringup record.launch.py --show-args       # every argument, described
    ros2 launch comsim_bringup record.launch.py bench_lab:=false namespace:=arm1 \
        remappings:='joint_states:=/arm1/driver/joint_states'  # topics where your driver has them
    comsim-launch record.launch.py                        # the same graph without ros2 launch

robot_state_publisher (joint states -> /tf, `robot_description`) runs where it is installed;
comsim-launch on a pip install leaves it out and says so.

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
    # /joint_states -> /tf for RViz and Foxglove's 3D panel; left out where not installed (pip).
    {'package': 'robot_state_publisher', 'executable': 'robot_state_publisher',
     'name': 'robot_state_publisher', 'params': [], 'optional': True,
     'robot_description_from': 'robot_description'},
]
ARGUMENTS = {
    'bench_lab': ('true', 'start the bench lab (false: your arm driver and cameras run)'),
    'unattended': ('false', 'start the episode runner: scripted episodes, no operator'),
    'use_sim_time': ('$(var bench_lab)', 'every node on /clock (default: when the bench lab '
                     'runs; false on a real arm)'),
    **COMMON_ARGUMENTS,
    'robot_description': ('', "URDF or MJCF file of your arm: the teleop's robot model (joint "
                          "and velocity limits) and robot_state_publisher's robot_description; "
                          "empty: teleop.yaml's robot_model ('' there: the ComSim arm) and "
                          "the ComSim arm's URDF"),
}


def generate_launch_description():
    return launch_description(NODES, CONFIG, ARGUMENTS)
