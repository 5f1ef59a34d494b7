"""run_node: a node whose constructor refuses its input (a bad parameter) ends the process with
the one-line error and exit code 2 before any teardown of the half-built node (whose handles,
freed by gc or at shutdown, crashed the process under load)."""
import os
import signal
import subprocess
import sys
import textwrap
import time

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


def test_a_half_built_node_exits_2_before_its_teardown():
    proc = subprocess.run([sys.executable, '-c', SCRIPT], capture_output=True, text=True,
                          timeout=60, env={**os.environ, 'ROS_DOMAIN_ID': os.environ.get(
                              'ROS_DOMAIN_ID', '0')})
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert 'alive at shutdown' not in proc.stdout, proc.stdout   # no shutdown, no crash there
    assert proc.stderr.strip() == ('half-built: error: half_built.yaml: unknown parameter(s) '
                                   '[bogus]')


def _run(script: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, '-c', textwrap.dedent(script)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, 'ROS_DOMAIN_ID': os.environ.get('ROS_DOMAIN_ID',
                                                                                '0')})


def test_sigterm_while_the_node_is_being_built_stops_it_quietly():
    """A dying launcher's SIGTERM can land while a node is still being built: rclpy shuts the
    context, the constructor's next rcl call fails, and that is a stop, not a crash."""
    proc = _run('''
        import sys, time
        from rclpy.node import Node
        from comsim_core.ros import run

        class Slow(Node):
            def __init__(self):
                super().__init__('slow')
                print('building', flush=True)
                deadline = time.monotonic() + 20
                while run.rclpy.ok() and time.monotonic() < deadline:
                    time.sleep(0.05)
                self.create_publisher(__import__('std_msgs.msg').msg.String, 'x', 1)
        raise SystemExit(run.run_node(Slow, args=['slow']))
    ''')
    assert proc.stdout.readline().strip() == 'building'
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    assert 'Traceback' not in err, err[-2000:]


def test_a_node_whose_teardown_hangs_is_ended_with_its_stacks_in_the_log():
    """close() that never returns (a writer blocked on a dead disk, a DDS teardown that
    deadlocks) must not leave the node holding the arm's topics after SIGTERM."""
    proc = _run('''
        import time
        from rclpy.node import Node
        from comsim_core.ros import run
        run.TEARDOWN_S = 2

        class Stuck(Node):
            def __init__(self):
                super().__init__('stuck')
                self.create_timer(0.05, lambda: print('spinning', flush=True))
            def close(self):
                time.sleep(120)
        raise SystemExit(run.run_node(Stuck, args=['stuck']))
    ''')
    assert proc.stdout.readline().strip() == 'spinning'
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 15
    assert proc.returncode != 0
    assert 'in close' in err, err[-2000:]


def test_a_user_mistake_exits_2_however_slow_the_interpreter_is_to_finish():
    """Finalisation that outlasts the teardown bound (torch and DDS destructors on a loaded
    machine, here an exit handler) must not turn the one-line error's exit code 2 into the
    watchdog's 1 with a stack dump."""
    proc = _run('''
        import atexit, time
        from rclpy.node import Node
        from comsim_core.errors import UserError
        from comsim_core.ros import run
        run.TEARDOWN_S = 1
        atexit.register(time.sleep, 5)

        class Bad(Node):
            def __init__(self):
                super().__init__('bad')
                raise UserError('bad.yaml: parameter rate_hz expects a number, got fast')
        raise SystemExit(run.run_node(Bad, args=['bad']))
    ''')
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert err.strip() == 'bad: error: bad.yaml: parameter rate_hz expects a number, got fast'
