"""run_node: a node whose constructor raises (a bad parameter) is freed before rclpy shuts down,
and the process ends with the one-line error and exit code 2."""
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import weakref
    from rclpy.node import Node
    from comsim_core.errors import UserError
    from comsim_core.ros import run

    refs = []
    class HalfBuilt(Node):
        """Holds a callback bound to itself (a reference cycle), as every ComSim node's
        parameter callback does, then fails its parameter check."""
        def __init__(self):
            super().__init__('half_built')
            self.add_on_set_parameters_callback(self.on_set)
            refs.append(weakref.ref(self))
            raise UserError('half_built.yaml: unknown parameter(s) [bogus]')
        def on_set(self, params):
            return None

    shutdown = run.rclpy.shutdown
    def checked_shutdown(*a, **k):
        print('alive at shutdown:', refs[0]() is not None, flush=True)
        return shutdown(*a, **k)
    run.rclpy.shutdown = checked_shutdown
    raise SystemExit(run.run_node(HalfBuilt, args=['half-built']))
''')


def test_a_half_built_node_is_freed_before_shutdown_and_exits_2():
    proc = subprocess.run([sys.executable, '-c', SCRIPT], capture_output=True, text=True,
                          timeout=60, env={**os.environ, 'ROS_DOMAIN_ID': os.environ.get(
                              'ROS_DOMAIN_ID', '0')})
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert 'alive at shutdown: False' in proc.stdout, proc.stdout
    assert proc.stderr.strip() == ('half-built: error: half_built.yaml: unknown parameter(s) '
                                   '[bogus]')
