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
ARGUMENTS = {
    'bench_lab': ('true', 'start the bench lab (false: your arm driver and cameras run)'),
    'record': ('false', 'also start the recorder, to record the rollouts'),
    'use_sim_time': ('$(var bench_lab)', 'every node on /clock (default: when the bench lab '
                     'runs; false on a real arm)'),
}


def generate_launch_description():
    from comsim_core.ros.graph import launch_description
    return launch_description(NODES, CONFIG, ARGUMENTS)
