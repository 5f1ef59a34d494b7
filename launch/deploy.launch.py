"""Deploy a policy: bench lab (or your arm driver and cameras) and the policy node.

    ros2 launch comsim_bringup deploy.launch.py checkpoint:=DIR                 # bench lab + policy
    ros2 launch comsim_bringup deploy.launch.py checkpoint:=DIR bench_lab:=false  # your arm runs
    ros2 launch comsim_bringup deploy.launch.py checkpoint:=DIR record:=true    # record rollouts
    comsim-launch deploy.launch.py checkpoint:=DIR                # the same, without ros2 launch

robot_state_publisher (joint states -> /tf) runs where it is installed; comsim-launch on a pip
install leaves it out and says so.
The policy starts disabled: `ros2 service call /policy/enable std_srvs/srv/SetBool "{data: true}"`.
`NODES` is the one description of the graph; `comsim-launch` reads it where `launch` is not
installed (pip installs), `generate_launch_description` where it is.
"""
from comsim_core.paths import config_dir
from comsim_core.ros.graph import COMMON_ARGUMENTS, launch_description

CONFIG = config_dir()   # share/comsim_bringup/config on a ROS install, else the checkout's

NODES = [
    {'package': 'comsim_bench_lab', 'executable': 'comsim-bench-lab', 'name': 'bench_lab',
     'params': ['bench_lab.yaml'], 'condition': 'bench_lab'},
    {'package': 'comsim_policy', 'executable': 'comsim-policy', 'name': 'policy',
     'params': ['policy.yaml'],
     'from_arguments': {'checkpoint': 'checkpoint', 'robot_model': 'robot_description'}},
    {'package': 'comsim_teleop', 'executable': 'comsim-recorder', 'name': 'recorder',
     'params': ['recorder.yaml'], 'condition': 'record'},
    # /joint_states -> /tf for RViz and Foxglove's 3D panel; left out where not installed (pip).
    {'package': 'robot_state_publisher', 'executable': 'robot_state_publisher',
     'name': 'robot_state_publisher', 'params': [], 'optional': True,
     'robot_description_from': 'robot_description'},
]
ARGUMENTS = {
    'bench_lab': ('true', 'start the bench lab (false: your arm driver and cameras run)'),
    'record': ('false', 'also start the recorder, to record the rollouts'),
    'use_sim_time': ('$(var bench_lab)', 'every node on /clock (default: when the bench lab '
                     'runs; false on a real arm)'),
    **COMMON_ARGUMENTS,
    'checkpoint': ('', "the policy checkpoint folder (config.yaml + model.safetensors); empty: "
                   "policy.yaml's checkpoint"),
    'robot_description': ('', "URDF or MJCF file of your arm: the policy's robot model (joint "
                          "and velocity limits) and robot_state_publisher's robot_description; "
                          "empty: policy.yaml's robot_model ('' there: the ComSim arm) and "
                          "the ComSim arm's URDF"),
}


def generate_launch_description():
    return launch_description(NODES, CONFIG, ARGUMENTS)
