"""Bench lab node: the simulated arm and cameras, speaking what a real driver speaks.

Publishes `/joint_states`, `/cameras/<name>/image_raw` + `camera_info`, and `/clock` (the lab
runs on sim time, as Gazebo does, because rendering cannot keep real time on a CPU); accepts
`trajectory_msgs/JointTrajectory` (joint_trajectory_controller semantics) and
`std_msgs/Float64MultiArray` (forward position controller). Services `~/reset` and
`~/check_success`, and the latched `~/task_state` (ground truth for the scripted expert and
evaluators, never for the twin), make episodes scriptable.

The published CameraInfo is the camera's nominal (factory) calibration by default, as a real
driver's would be: the true intrinsics and distortion stay hidden so calibration is real work.
"""
from __future__ import annotations

import json
import queue
import threading
import time
from concurrent.futures import Future

import numpy as np
import rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Bool, Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from comsim_bench_lab.config import LabConfig
from comsim_bench_lab.lab import REGIONS, BenchLab
from comsim_bench_lab.realism import RealismProfile
from comsim_core.control.trajectory import TrajectoryError, TrajectoryFollower
from comsim_core.paths import resolve_config_path
from comsim_core.ros.messages import (
    COMMAND_QOS,
    IMAGE_QOS,
    LATCHED_QOS,
    SENSOR_QOS,
    camera_info_msg,
    image_msg,
    joint_state_msg,
    time_to_sec,
    to_time_msg,
    trajectory_points,
)
from comsim_core.ros.params import Param, ParameterConfigError, declare_parameters
from comsim_core.ros.run import run_node

DEFAULTS = {
    'lab_config': 'config/bench_lab/lab.yaml',
    'realism_profile': 'config/bench_lab/realism.yaml',
    # read at each reset: the episode runner and the evaluator set them between episodes
    'task': Param('stack_blocks', 'task of the next reset', dynamic=True),
    'seed': Param(0, 'layout seed of the next reset (then incremented)', dynamic=True),
    'region': Param('id', 'layout region of the next reset', choices=REGIONS, dynamic=True),
    'variant': Param('', "object variant of the next reset ('' = default)", dynamic=True),
    'joint_state_rate_hz': 200.0,
    'camera_rate_hz': 30.0,
    'real_time_factor': 1.0,
    'camera_info': 'nominal',
    'joint_states_topic': 'joint_states',          # relative, like a ros2_control driver's
    'camera_topic_prefix': '/cameras',
    'trajectory_topic': 'joint_trajectory_controller/joint_trajectory',
    'forward_topic': 'forward_position_controller/commands',
}


def nominal_intrinsics(K: np.ndarray, width: int, height: int) -> np.ndarray:
    """A factory calibration: the focal length rounded to 5 %, principal point at the centre."""
    f = float(np.sqrt(K[0, 0] * K[1, 1]))
    step = 0.05 * f
    f_nom = round(f / step) * step
    return np.array([[f_nom, 0, width / 2], [0, f_nom, height / 2], [0, 0, 1]])


class BenchLabNode(Node):
    def __init__(self):
        super().__init__('bench_lab')
        self.p = declare_parameters(self, DEFAULTS)
        self.realism = (RealismProfile.load(resolve_config_path(self.p.realism_profile))
                        if self.p.realism_profile else None)
        self.config = LabConfig.load(resolve_config_path(self.p.lab_config))
        task = self.config.tasks.get(self.p.task)
        for name, allowed in (('camera_info', ['nominal', 'true']),   # region: its Param's choices
                              ('task', sorted(self.config.tasks)),
                              ('variant', [''] + sorted(task.variants if task else {}))):
            if getattr(self.p, name) not in allowed:
                raise ParameterConfigError(f'node {self.get_name()!r}: parameter {name!r}: '
                                           f'{getattr(self.p, name)!r} is not one of {allowed}')
        self.lock = threading.Lock()  # guards the follower and the latest joint positions
        self.requests: queue.Queue = queue.Queue()
        self.seed = int(self.p.seed)
        self.running = True
        self.go = threading.Event()  # set once publishers and services exist
        # MuJoCo's GL context belongs to the thread that made it: the sim thread owns the lab and
        # everything else asks it through `_in_sim_thread`.
        ready: Future = Future()
        self.thread = threading.Thread(target=self._run, args=(ready,), name='bench_lab_sim',
                                       daemon=True)
        self.thread.start()
        ready.result(timeout=120)

        self.clock_pub = self.create_publisher(Clock, '/clock', 10)
        self.js_pub = self.create_publisher(JointState, self.p.joint_states_topic, SENSOR_QOS)
        self.cam_pubs = {}
        for cam in self.lab.camera_names:
            base = f'{self.p.camera_topic_prefix}/{cam}'
            self.cam_pubs[cam] = (self.create_publisher(Image, f'{base}/image_raw', IMAGE_QOS),
                                  self.create_publisher(CameraInfo, f'{base}/camera_info',
                                                        IMAGE_QOS))
        self.task_pub = self.create_publisher(String, '~/task_state', LATCHED_QOS)
        self.success_pub = self.create_publisher(Bool, '~/success', 10)
        self.create_subscription(JointTrajectory, self.p.trajectory_topic, self._on_trajectory,
                                 COMMAND_QOS)
        self.create_subscription(Float64MultiArray, self.p.forward_topic, self._on_forward,
                                 COMMAND_QOS)
        self.create_service(Trigger, '~/reset', self._on_reset)
        self.create_service(Trigger, '~/check_success', self._on_check_success)
        self._publish_task_state()
        self.go.set()

    # -- commands -----------------------------------------------------------------------------
    def _on_trajectory(self, msg: JointTrajectory):
        with self.lock:
            try:
                self.follower.set_trajectory(list(msg.joint_names), trajectory_points(msg),
                                             time_to_sec(msg.header.stamp), self.sim_time,
                                             self.q_now)
            except TrajectoryError as exc:
                self.get_logger().error(f'trajectory rejected: {exc}', throttle_duration_sec=2.0)

    def _on_forward(self, msg: Float64MultiArray):
        with self.lock:
            try:
                self.follower.set_position(msg.data, self.sim_time)
            except TrajectoryError as exc:
                self.get_logger().error(f'position command rejected: {exc}',
                                        throttle_duration_sec=2.0)

    # -- episodes -----------------------------------------------------------------------------
    def _in_sim_thread(self, fn, timeout: float = 60.0):
        """Run fn(lab) in the sim thread between two steps and return its result."""
        done: Future = Future()
        self.requests.put((fn, done))
        return done.result(timeout=timeout)

    def _reset_lab(self, task, seed, region, variant):
        """In the sim thread: new layout, arm at home, holding still."""
        self.lab.reset(task, int(seed), region, variant or None)
        with self.lock:
            self.follower = TrajectoryFollower(self.lab.joint_names)
            self.q_now = self.lab.joint_state()[0]
            self.sim_time = self.lab.time
            self.follower.set_position(self.q_now, self.sim_time)

    def _on_reset(self, req, resp):
        """Reset to the layout of the current task/region/variant/seed parameters.

        The seed parameter then advances by one, so repeated resets give fresh layouts while a
        seed set by an evaluator is used exactly.
        """
        task = self.get_parameter('task').value
        region = self.get_parameter('region').value
        variant = self.get_parameter('variant').value
        self.seed = int(self.get_parameter('seed').value)
        try:
            self._in_sim_thread(lambda lab: self._reset_lab(task, self.seed, region, variant))
        except ValueError as exc:
            resp.success, resp.message = False, str(exc)
            return resp
        self.set_parameters([Parameter('seed', value=self.seed + 1)])
        state = self._publish_task_state()
        resp.success, resp.message = True, json.dumps(
            {k: state[k] for k in ('task', 'seed', 'region', 'variant')})
        return resp

    def _on_check_success(self, req, resp):
        ok, why = self._in_sim_thread(lambda lab: lab.check_success())
        self.success_pub.publish(Bool(data=bool(ok)))
        resp.success, resp.message = bool(ok), why
        return resp

    def _publish_task_state(self) -> dict:
        state = self._in_sim_thread(lambda lab: lab.task_state())
        self.task_pub.publish(String(data=json.dumps(state)))
        return state

    # -- simulation loop ----------------------------------------------------------------------
    def _run(self, ready: Future):
        try:
            self.lab = BenchLab(self.config, self.realism)
            self._reset_lab(self.p.task, self.seed, self.p.region, self.p.variant)
        except Exception as exc:
            ready.set_exception(exc)
            return
        ready.set_result(None)
        try:
            while not self.go.wait(0.05):  # serve start-up requests until the node is wired
                self._serve_requests()
            self._loop()
        except Exception as exc:  # a dead sim thread must not leave a silent node behind
            self.get_logger().fatal(f'simulation loop failed: {exc!r}')
            raise
        finally:
            self.running = False
            self.lab.close()
            while not self.requests.empty():
                self.requests.get()[1].set_exception(RuntimeError('bench lab stopped'))

    def _serve_requests(self):
        while True:
            try:
                fn, done = self.requests.get_nowait()
            except queue.Empty:
                return
            try:
                done.set_result(fn(self.lab))
            except Exception as exc:
                done.set_exception(exc)

    def _loop(self):
        """Step physics to the next joint-state time, publish; render when a frame is due.

        Publication times are scheduled in sim time, so rates hold on average even when the
        physics step does not divide the publishing period.
        """
        js_period = 1.0 / self.p.joint_state_rate_hz
        cam_period = 1.0 / self.p.camera_rate_hz
        dt = self.lab.timestep
        rtf = float(self.p.real_time_factor)
        infos = {cam: self._camera_info(cam) for cam in self.lab.camera_names}
        next_js = next_cam = self.lab.time
        wall0, sim0 = time.monotonic(), self.lab.time
        report_wall, report_sim = wall0, sim0
        while self.running and rclpy.ok():
            self._serve_requests()
            with self.lock:
                target = self.follower.target(self.lab.time)
            if target is not None:
                self.lab.command_positions(target)
            next_js += js_period
            self.lab.step(max(1, int(np.ceil((next_js - self.lab.time) / dt - 1e-9))))
            t = self.lab.time
            pos, vel, eff = self.lab.joint_state()
            with self.lock:
                self.q_now, self.sim_time = pos, t
            frames = None
            if t + 1e-9 >= next_cam:
                frames = {cam: self.lab.render(cam) for cam in self.lab.camera_names}
                next_cam += cam_period * max(1, np.ceil((t + 1e-9 - next_cam) / cam_period))
            try:
                self._publish(t, pos, vel, eff, frames, infos)
            except Exception:
                if not rclpy.ok():  # Ctrl-C shut the context down mid-publish: just stop
                    return
                raise
            wall = time.monotonic()
            if rtf > 0:
                ahead = (t - sim0) / rtf - (wall - wall0)
                if ahead > 0:
                    time.sleep(ahead)
                elif ahead < -0.5:  # fell behind: do not try to catch up in a burst
                    wall0, sim0 = wall, t
            if wall - report_wall >= 10.0:
                self.get_logger().info(
                    f'real-time factor {(t - report_sim) / (wall - report_wall):.2f}')
                report_wall, report_sim = wall, t

    def _publish(self, t, pos, vel, eff, frames, infos):
        self.clock_pub.publish(Clock(clock=to_time_msg(t)))
        self.js_pub.publish(joint_state_msg(self.lab.joint_names, pos, vel, eff, t))
        for cam, rgb in (frames or {}).items():
            image_pub, info_pub = self.cam_pubs[cam]
            frame_id = f'{cam}_optical_frame'
            image_pub.publish(image_msg(rgb, t, frame_id))
            w, h, K, D = infos[cam]
            info_pub.publish(camera_info_msg(w, h, K, D, t, frame_id))

    def _camera_info(self, cam):
        calib = self.lab.camera_info(cam)
        K = np.asarray(calib.K, dtype=float)
        if self.p.camera_info == 'true':
            return calib.width, calib.height, K, np.asarray(calib.D, dtype=float)
        return calib.width, calib.height, nominal_intrinsics(K, calib.width, calib.height), \
            np.zeros(5)

    def close(self):
        self.running = False
        if self.thread.is_alive():
            self.thread.join(timeout=5.0)


def main(args=None):
    return run_node(BenchLabNode, args, threads=2)


if __name__ == '__main__':
    main()
