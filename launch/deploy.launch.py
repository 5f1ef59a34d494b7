"""Deploy a policy: bench lab (or your arm driver and cameras) and the policy node.

    ros2 launch launch/deploy.launch.py                       # bench lab + policy
    ros2 launch launch/deploy.launch.py bench_lab:=false      # a real arm driver runs already
    ros2 launch launch/deploy.launch.py record:=true          # also record rollouts
    comsim-launch launch/deploy.launch.py --set policy.checkpoint:=DIR

The policy starts disabled: `ros2 service call /policy/enable std_srvs/srv/SetBool "{data: true}"`.
`NODES` is the one description of the graph; `comsim-launch` reads it where `launch` is not
installed (pip installs), `generate_launch_description` where it is.
"""
from pathlib import Path

CONFIG = Path(__file__).resolve().parent.parent / 'config'

NODES = [
    {'package': 'comsim_bench_lab', 'executable': 'comsim-bench-lab', 'name': 'bench_lab',
     'params': ['bench_lab.yaml'], 'condition': 'bench_lab'},
    {'package': 'comsim_policy', 'executable': 'comsim-policy', 'name': 'policy',
     'params': ['policy.yaml']},
    {'package': 'comsim_teleop', 'executable': 'comsim-recorder', 'name': 'recorder',
     'params': ['recorder.yaml'], 'condition': 'record'},
]
ARGUMENTS = {'bench_lab': 'true', 'record': 'false'}


def generate_launch_description():
    from launch.actions import DeclareLaunchArgument
    from launch.conditions import IfCondition
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    from launch import LaunchDescription

    actions = [DeclareLaunchArgument(k, default_value=v) for k, v in ARGUMENTS.items()]
    for spec in NODES:
        condition = spec.get('condition')
        actions.append(Node(
            package=spec['package'], executable=spec['executable'], name=spec['name'],
            parameters=[str(CONFIG / p) for p in spec['params']], output='screen',
            emulate_tty=True,
            condition=IfCondition(LaunchConfiguration(condition)) if condition else None))
    return LaunchDescription(actions)
