"""Teleoperation node: one input source in, steady-rate joint commands out.

Sources: `leader` (sensor_msgs/JointState of a leader arm), `twist` (geometry_msgs/Twist, e.g. a
SpaceMouse driver), `joy` (sensor_msgs/Joy with a deadman button), `keyboard` (this terminal),
`scripted` (an expert that solves the bench lab's task from its ground-truth task state, for
unattended recording). Every target passes joint-limit and velocity clamping and is only sent
while enabled (service `~/enable`, or the joystick's deadman button).

Live sources send one point per tick. The scripted expert knows its future, so each tick sends
the next `lookahead_s` of its program, stamped with the tick's time and starting at the current
target: ticks the process misses under load (a starved process, a /clock burst) then do not
change the motion the arm executes, and the controller never re-interpolates from the measured,
lagging state (what a one-point goal in the future makes a joint_trajectory_controller do).
"""
from __future__ import annotations

import json
import sys
import threading

import numpy as np
import rclpy
from geometry_msgs.msg import Twist
from rclpy.node import Node
from sensor_msgs.msg import JointState, Joy
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from comsim_core.control.limits import CommandShaper
from comsim_core.robot.model import RobotModel
from comsim_core.ros.messages import (
    COMMAND_QOS,
    LATCHED_QOS,
    SENSOR_QOS,
    chunk_trajectory_msg,
    trajectory_msg,
)
from comsim_core.ros.params import Param, ParameterConfigError, declare_parameters
from comsim_core.ros.run import run_node
from comsim_core.tasks.expert import ScriptedExpert
from comsim_teleop.teleop.sources import (
    CartesianVelocitySource,
    JoyMapping,
    LeaderArmSource,
    joy_to_twist,
    key_to_twist,
)

DEFAULTS = {
    'source': 'scripted',
    'robot_model': '',
    'rate_hz': 50.0,
    'output': 'trajectory',
    # Topic names are relative, as a ROS driver's are: a namespace (/arm1) and remappings
    # (`-r joint_states:=/arm1/joint_states`) apply to them.
    'trajectory_topic': 'joint_trajectory_controller/joint_trajectory',
    'forward_topic': 'forward_position_controller/commands',
    'joint_states_topic': 'joint_states',
    'leader_topic': 'leader/joint_states',
    'twist_topic': 'teleop/twist',
    'joy_topic': 'joy',
    'task_state_topic': 'bench_lab/task_state',
    'velocity_scale': Param(1.0, 'fraction of the robot model\'s joint velocity limits the '
                            'commands may use; takes effect at once', range=(0.01, 1.0),
                            dynamic=True),
    'start_enabled': False,
    'expert_seed': 0,
    'lookahead_s': 1.0,
}
SOURCES = ('scripted', 'leader', 'twist', 'joy', 'keyboard')


class TeleopNode(Node):
    def __init__(self):
        super().__init__('teleop')
        self.p = declare_parameters(self, DEFAULTS, on_change=self._parameter_changed)
        if self.p.source not in SOURCES:
            raise ParameterConfigError(
                f'teleop: source {self.p.source!r} unknown; choose one of {SOURCES}')
        if self.p.output not in ('trajectory', 'forward'):
            raise ParameterConfigError("teleop: output must be 'trajectory' or 'forward'")
        self.robot = RobotModel.load(self.p.robot_model or None)
        self.shaper = CommandShaper(self.robot.lower, self.robot.upper, self.robot.max_velocity,
                                    self.p.velocity_scale)
        self.dt = 1.0 / self.p.rate_hz
        self.enabled = bool(self.p.start_enabled)
        self.q_measured: np.ndarray | None = None
        self.task_state: dict | None = None
        self.expert: ScriptedExpert | None = None
        self.expert_t0 = 0.0
        self.last_tick: float | None = None
        self.expert_seed = int(self.p.expert_seed)
        self.state = 'idle'
        self.source = self._make_source()

        self.create_subscription(JointState, self.p.joint_states_topic, self._on_joint_state,
                                 SENSOR_QOS)
        if self.p.output == 'trajectory':
            self.pub = self.create_publisher(JointTrajectory, self.p.trajectory_topic, COMMAND_QOS)
        else:
            self.pub = self.create_publisher(Float64MultiArray, self.p.forward_topic, COMMAND_QOS)
        self.status_pub = self.create_publisher(String, '~/status', LATCHED_QOS)
        self.create_service(SetBool, '~/enable', self._on_enable)
        self.create_service(Trigger, '~/start_scripted', self._on_start_scripted)
        self.create_timer(self.dt, self._tick)
        self._publish_status()
        self.get_logger().info(f'teleop: source={self.p.source} output={self.p.output} '
                               f'rate={self.p.rate_hz} Hz enabled={self.enabled}')

    # -- inputs -------------------------------------------------------------------------------
    def _parameter_changed(self, name: str, value) -> None:
        """A dynamic parameter set at run time (``ros2 param set /teleop velocity_scale 0.3``)."""
        if name == 'velocity_scale':
            self.shaper.max_velocity = np.asarray(self.robot.max_velocity, float) * float(value)
            self.get_logger().info(f'velocity_scale {value:g}: joint velocity limits '
                                   f'{np.round(self.shaper.max_velocity, 3).tolist()} rad/s')

    def _make_source(self):
        if self.p.source == 'leader':
            src = LeaderArmSource(self.robot)
            self.create_subscription(JointState, self.p.leader_topic,
                                     lambda m: src.on_leader_state(list(m.name), m.position),
                                     SENSOR_QOS)
            return src
        if self.p.source in ('twist', 'joy', 'keyboard'):
            src = CartesianVelocitySource(self.robot)
            if self.p.source == 'twist':
                self.create_subscription(Twist, self.p.twist_topic, self._on_twist, 10)
            elif self.p.source == 'joy':
                self.joy_mapping = JoyMapping()
                self.create_subscription(Joy, self.p.joy_topic, self._on_joy, 10)
            else:
                threading.Thread(target=self._read_keyboard, daemon=True).start()
            return src
        self.create_subscription(String, self.p.task_state_topic, self._on_task_state,
                                 LATCHED_QOS)
        return None

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_joint_state(self, msg: JointState):
        index = {n: i for i, n in enumerate(msg.name)}
        try:
            self.q_measured = np.array([msg.position[index[n]] for n in self.robot.joint_names])
        except KeyError as exc:
            self.get_logger().error(f'/joint_states lacks joint {exc}; has {list(msg.name)}',
                                    throttle_duration_sec=5.0)

    def _on_twist(self, msg: Twist):
        self.source.on_twist([msg.linear.x, msg.linear.y, msg.linear.z,
                              msg.angular.x, msg.angular.y, msg.angular.z], self._now())

    def _on_joy(self, msg: Joy):
        twist, grip, deadman = joy_to_twist(msg.axes, msg.buttons, self.joy_mapping)
        self._set_enabled(deadman)
        self.source.on_twist(twist, self._now(), grip)

    def _read_keyboard(self):
        import termios
        import tty
        if not sys.stdin.isatty():
            self.get_logger().error('keyboard source needs a terminal (stdin is not a tty)')
            return
        self.get_logger().info('keys: w/s x, a/d y, r/f z, i/k pitch, j/l yaw, o/c gripper, '
                               'space enable/disable')
        old = termios.tcgetattr(sys.stdin)
        try:
            tty.setcbreak(sys.stdin.fileno())
            while rclpy.ok():
                key = sys.stdin.read(1)
                if key == ' ':
                    self._set_enabled(not self.enabled)
                    continue
                mapped = key_to_twist(key)
                if mapped is not None:
                    self.source.on_twist(mapped[0], self._now(), mapped[1])
        finally:
            termios.tcsetattr(sys.stdin, termios.TCSADRAIN, old)

    def _on_task_state(self, msg: String):
        self.task_state = json.loads(msg.data)

    # -- services -----------------------------------------------------------------------------
    def _set_enabled(self, on: bool):
        if on and not self.enabled and self.q_measured is not None:
            self.shaper.reset(self.q_measured)
        self.enabled = bool(on)

    def _on_enable(self, req, resp):
        self._set_enabled(req.data)
        resp.success, resp.message = True, f'enabled={self.enabled}'
        self._publish_status()
        return resp

    def _on_start_scripted(self, req, resp):
        if self.p.source != 'scripted':
            resp.success, resp.message = False, f'source is {self.p.source!r}, not scripted'
        elif self.task_state is None or self.q_measured is None:
            resp.success, resp.message = False, 'no task state or joint state received yet'
        else:
            self.expert = ScriptedExpert(self.robot, self.task_state, self.expert_seed)
            self.expert_seed += 1
            self.expert_t0 = self._now()
            self.last_tick = None
            self.shaper.reset(self.q_measured)
            self.enabled, self.state = True, 'running'
            resp.success = True
            resp.message = json.dumps({'task': self.task_state.get('task'),
                                       'seed': self.task_state.get('seed')})
        self._publish_status()
        return resp

    def _publish_status(self):
        self.status_pub.publish(String(data=json.dumps(
            {'state': self.state, 'source': self.p.source, 'enabled': self.enabled})))

    # -- output -------------------------------------------------------------------------------
    def _tick(self):
        if not self.enabled or self.q_measured is None:
            return
        now = self._now()
        if self.p.source == 'scripted':
            self._tick_scripted(now)
            return
        target = self.source.command(now, self.q_measured)
        if target is None:
            return
        q = self.shaper(target, self.dt)
        if self.p.output == 'trajectory':
            self.pub.publish(trajectory_msg(self.robot.joint_names, q, 0.0, self.dt))
        else:
            self.pub.publish(Float64MultiArray(data=[float(x) for x in q]))

    def _tick_scripted(self, now: float):
        if self.expert is None:
            return
        path = self.expert.window(now - self.expert_t0, self.q_measured, self.p.lookahead_s,
                                  self.dt)
        if path is None:
            self.expert, self.enabled, self.state = None, False, 'done'
            self._publish_status()
            return
        elapsed = self.dt if self.last_tick is None else max(now - self.last_tick, self.dt)
        self.last_tick = now
        q = self.shaper.path(path, self.dt, elapsed)
        if self.p.output == 'trajectory':
            self.pub.publish(chunk_trajectory_msg(self.robot.joint_names, q, now, self.dt, 0.0))
        else:   # a forward position controller takes one position: the current target
            self.pub.publish(Float64MultiArray(data=[float(x) for x in q[0]]))

def main(args=None):
    return run_node(TeleopNode, args)


if __name__ == '__main__':
    main()
