"""Closed-loop evaluation in one process per worker: environment, trajectory follower and the
deploy node's `PolicyController`, stepped on sim time, no DDS.

One rollout: reset the layout, let it settle, enable the controller (the runner restarts its
sampling noise at seed 0), then tick it every control period with the measured joint state,
run a prediction when it asks for one and hand the result back `latency_s` of sim time later
(plus, optionally, the measured wall time of the prediction), and execute every command the
way the bench lab node executes JointTrajectory / forward messages (`TrajectoryFollower`, its
target refreshed at the node's joint-state rate). Camera frames are rendered only at the ticks
whose frames the policy will observe. A rollout stops at success (checked every
`check_every_s`) or at `timeout_factor` x the scripted expert's duration + `timeout_margin_s`;
everything is a function of the seed, so a rollout is deterministic.

Jobs (checkpoint, task, region, variant, seed) run in `workers` spawned processes; each builds
its environment once and loads each checkpoint once.
"""
from __future__ import annotations

import dataclasses
import math
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from comsim_core.control.trajectory import TrajectoryFollower, TrajectoryPoint
from comsim_core.episodes.meta import EpisodeMeta
from comsim_core.errors import UserError
from comsim_policy import controller
from comsim_policy.controller import Command, Hold, Notice, Output, PolicyController
from comsim_policy.evaluation.config import EvaluationConfig, node_parameters
from comsim_policy.evaluation.environment import (
    Environment,
    environment_class,
    load_environment,
)
from comsim_policy.evaluation.episode_writer import RolloutEpisodeWriter
from comsim_policy.evaluation.journal import (
    RolloutJournal,
    checkpoint_digest,
    rollout_key,
    settings_digest,
)
from comsim_policy.evaluation.results import Evaluation, Rollout, checkpoint_names

LAB_SOURCE = 'real'   # filmed in the bench lab (the DDS path's episode_runner.LAB_SOURCE)
# WorkerSpec fields that change what is written, never an outcome: a resume may change them
RECORDING_ONLY = ('out_dir', 'saved_episodes', 'sheets')


@dataclass(frozen=True)
class RolloutSettings:
    latency_s: float               # sim seconds from request to accept
    add_measured_latency: bool     # + the prediction's wall time (then not deterministic)
    timeout_factor: float          # x the expert's duration on the layout
    timeout_margin_s: float
    check_every_s: float
    settle_s: float                # sim seconds between reset and enable
    stale_after_s: float           # the controller's watchdog (must cover one chunk)


@dataclass
class Outcome:
    """What one rollout did: the result, and the commanded targets (time received, targets)."""

    success: bool
    message: str
    sim_s: float
    timeout_s: float
    renders: int
    chunks: int
    commands: list[tuple[float, np.ndarray]] = field(default_factory=list)
    moved_m: dict[str, float] = field(default_factory=dict)   # object -> xy distance moved


def build_controller(runner, policy: dict[str, Any], stale_after_s: float) -> PolicyController:
    """The controller as the policy node builds it, from the node's parameters (`policy`)."""
    try:
        return controller.build_controller(
            runner, robot_model=policy.get('robot_model', ''),
            velocity_scale=float(policy.get('velocity_scale', 1.0)), stale_after_s=stale_after_s,
            inference_rate_hz=float(policy.get('inference_rate_hz', 0.0)),
            output=policy.get('output', 'trajectory'),
            inference_timeout_s=float(policy.get('inference_timeout_s', 2.0)))
    except controller.ControllerSetupError as exc:
        raise UserError(f'evaluation: policy {exc}') from exc


def check_stale_after(stale_after_s: float, runner, latency_s: float) -> None:
    """Frames come only when the policy will look at them, so between two chunks the newest
    image is up to one chunk old: a watchdog shorter than that would hold the arm every chunk."""
    cfg = runner.config
    need = (int(cfg.n_action_steps) + 1) / float(cfg.control_hz) + latency_s
    if stale_after_s < need:
        raise UserError(f'evaluation: in_process.stale_after_s {stale_after_s:g} s is shorter '
                        f'than one chunk plus latency ({need:.2f} s) of this checkpoint: the '
                        f'watchdog would hold the arm between on-demand frames')


def load_runner_class(path: str):
    """The policy node's `runner_class` (module:Class), without importing the node (rclpy)."""
    try:
        return controller.load_runner_class(path)
    except controller.ControllerSetupError as exc:
        raise UserError(f'evaluation: policy {exc}') from exc


class _Arm:
    """The bench lab node's command semantics, without its ROS: trajectories and forward
    commands into a `TrajectoryFollower` over the environment's joints."""

    def __init__(self, env: Environment, policy_joints: list[str], period: float,
                 writer: RolloutEpisodeWriter | None):
        self.env, self.names, self.period, self.writer = env, list(policy_joints), period, writer
        self.follower = TrajectoryFollower(env.joint_names)
        self.follower.set_position(env.joint_state()[0], env.time)
        self.commands: list[tuple[float, np.ndarray]] = []

    def apply(self, out: Output, t: float) -> None:
        if out is None or isinstance(out, Notice):
            return
        q_now = self.env.joint_state()[0]
        if isinstance(out, Hold):   # the node: a one-point trajectory due one period from now
            targets, stamp, offsets = out.position[None], 0.0, np.array([self.period])
        else:
            targets, stamp = out.targets, out.t_obs
            offsets = out.offset + self.period * np.arange(len(targets))
        if isinstance(out, Command) and not out.chunk:   # forward position controller
            self.follower.set_position(self.follower.reorder(self.names, targets[-1]), t)
        else:
            points = [TrajectoryPoint(float(dt), q) for q, dt in zip(targets, offsets)]
            self.follower.set_trajectory(self.names, points, stamp, t, q_now)
        self.commands.append((t, np.array(targets, dtype=float)))
        if self.writer is not None:
            self.writer.command(t, stamp if stamp > 0 else t, targets, offsets)


def run_rollout(env: Environment, ctl: PolicyController, task: str, seed: int, region: str,
                variant: str, s: RolloutSettings, writer: RolloutEpisodeWriter | None = None,
                expert_s: float | None = None) -> Outcome:
    """One rollout of a fresh controller (fresh watchdog, scheduler and latency estimate, so
    nothing carries over from an earlier rollout) on the layout of `seed`; `expert_s`: the
    expert's duration there, when known."""
    if expert_s is None:
        expert_s = env.expert_duration(task, seed, region, variant)
    timeout = s.timeout_factor * expert_s + s.timeout_margin_s
    env.reset(task, seed, region, variant)
    cameras = list(ctl.cameras)
    try:
        ctl.check_robot(env.joint_names, dict(env.camera_sizes))
    except ValueError as exc:   # PolicyMismatchError: wrong joints, cameras, sizes
        raise UserError(f'evaluation: the checkpoint does not match the environment: {exc}') \
            from exc
    idx = [env.joint_names.index(n) for n in ctl.joint_names]
    period, n_obs = ctl.period, ctl.history.obs_horizon
    arm = _Arm(env, ctl.joint_names, period, writer)
    k_enable = max(n_obs - 1, math.ceil(s.settle_s / period - 1e-9), 1)
    t_enable = k_enable * period
    dt, cmd_period = env.timestep, env.command_period
    tick = 0
    next_cmd = env.time
    next_check = t_enable + s.check_every_s
    pending = None   # (sim time due, Prediction)
    renders = 0
    success, why = False, ''

    def frames_needed(k: int, t: float) -> bool:
        """The policy will observe this tick's frame: a request is due now or within the next
        n_obs - 1 ticks (their observation windows reach back to this tick)."""
        if k < k_enable:
            return k >= k_enable - (n_obs - 1)
        return any(ctl.scheduler.should_request(t + j * period) for j in range(n_obs))

    while True:
        t = env.time
        if t + 1e-9 >= tick * period:
            q, dq = env.joint_state()
            ctl.observe_joint_state(t, t, q[idx])
            if writer is not None:
                writer.joint_state(t, q, dq)
            if tick == k_enable:
                ok, text, out = ctl.set_enabled(True)
                if not ok:
                    raise RuntimeError(f'policy refused to enable: {text}')
                arm.apply(out, t)
                start = env.object_poses()
            if frames_needed(tick, t):
                for cam in cameras:
                    rgb = env.render(cam)
                    renders += 1
                    ctl.observe_image(cam, t, rgb)
                    if writer is not None:
                        writer.image(t, cam, rgb)
            if tick >= k_enable:
                arm.apply(ctl.update(t), t)
                request = ctl.request(t)
                if request is not None:
                    prediction = ctl.predict(request)
                    delay = s.latency_s + (prediction.seconds if s.add_measured_latency else 0)
                    pending = (t + delay, prediction)
            tick += 1
        if pending is not None and t + 1e-9 >= pending[0]:
            arm.apply(ctl.accept(pending[1], t), t)
            pending = None
        if t >= t_enable and t + 1e-9 >= next_check:
            next_check += s.check_every_s
            success, why = env.check_success()
            if success:
                break
        if t - t_enable >= timeout - 1e-9:
            why = f'timeout after {timeout:.1f} sim s; {why}'
            break
        target = arm.follower.target(t)
        if target is not None:
            env.command_positions(target)
        next_cmd += cmd_period
        env.step(max(1, math.ceil((next_cmd - t) / dt - 1e-9)))
    ctl.set_enabled(False)
    end = env.object_poses()
    moved = {k: round(float(np.linalg.norm(end[k][:2] - start[k][:2])), 4)
             for k in start if k in end}
    return Outcome(bool(success), why, round(env.time - t_enable, 3), round(timeout, 2), renders,
                   ctl.chunks, arm.commands, moved)


# -- jobs and workers --------------------------------------------------------------------------
@dataclass(frozen=True)
class Job:
    checkpoint: str   # directory
    name: str         # its label in the results
    task: str
    region: str
    variant: str
    seed: int
    index: int        # k of seed + k: the first `sheets` of each cell get a contact sheet


@dataclass(frozen=True)
class WorkerSpec:
    env: str                    # module:Class
    env_params: dict[str, Any]
    policy: dict[str, Any]      # the policy node's parameters (device, runner_class, ...)
    settings: RolloutSettings
    out_dir: str
    saved_episodes: int     # the first N rollouts of each cell as episodes; -1 all
    sheets: int             # contact sheets of the first N (of those saved)


class Worker:
    """One environment and every checkpoint it was asked for, loaded once."""

    def __init__(self, spec: WorkerSpec):
        self.spec = spec
        self.env = load_environment(spec.env, spec.env_params)
        self.runners: dict[str, Any] = {}
        self.expert_s: dict[tuple, float] = {}   # per layout: paired arms share it

    def runner(self, checkpoint: str):
        if checkpoint not in self.runners:
            cls = load_runner_class(self.spec.policy.get('runner_class',
                                                         'comsim_policy.inference:PolicyRunner'))
            runner = cls.load(checkpoint, device=self.spec.policy.get('device') or None)
            check_stale_after(self.spec.settings.stale_after_s, runner,
                              self.spec.settings.latency_s)
            self.runners[checkpoint] = runner
        return self.runners[checkpoint]

    def run(self, job: Job) -> Rollout:
        wall0, cpu0 = time.monotonic(), time.process_time()
        runner = self.runner(job.checkpoint)
        ctl = build_controller(runner, self.spec.policy, self.spec.settings.stale_after_s)
        out = Path(self.spec.out_dir) / job.name
        label = f'{job.task}_{job.region}_{job.variant or "default"}_seed{job.seed}'
        writer = (RolloutEpisodeWriter(out / 'episodes', label, list(self.env.joint_names),
                                       list(ctl.cameras), 1.0 / ctl.period)
                  if self.spec.saved_episodes < 0 or job.index < self.spec.saved_episodes
                  else None)
        layout = (job.task, job.seed, job.region, job.variant)
        if layout not in self.expert_s:
            self.expert_s[layout] = self.env.expert_duration(*layout)
        try:
            o = run_rollout(self.env, ctl, job.task, job.seed, job.region, job.variant,
                            self.spec.settings, writer, self.expert_s[layout])
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        bag = sheet = ''
        if writer is not None:
            meta = EpisodeMeta(task=job.task, seed=job.seed, region=job.region,
                               variant=job.variant, source=LAB_SOURCE,
                               operator=f'policy:{job.name}')
            bag = str(writer.finish(meta, o.success, o.message))
            if job.index < self.spec.sheets:
                from comsim_core.report.episodes import contact_sheet  # noqa: PLC0415
                from comsim_core.report.images import save_png  # noqa: PLC0415
                sheet = str(save_png(out / 'sheets' / f'{label}.png',
                                     contact_sheet(Path(bag), list(ctl.cameras), 6)))
        return Rollout(job.name, job.task, job.region, job.variant, job.seed, o.success,
                       o.message, o.sim_s, round(time.monotonic() - wall0, 2), bag, sheet,
                       o.timeout_s, o.renders, o.chunks,
                       round(time.process_time() - cpu0, 2), o.moved_m)


_worker: Worker | None = None


def _init_worker(spec: WorkerSpec) -> None:
    """In a spawned process: one torch thread (workers are the parallelism), then the env."""
    global _worker
    os.environ['OMP_NUM_THREADS'] = '1'
    import torch  # noqa: PLC0415
    torch.set_num_threads(1)
    _worker = Worker(spec)


def _run_job(job: Job) -> Rollout:
    return _worker.run(job)


def make_jobs(checkpoints: dict[Path, str], tasks, n_rollouts: int, regions, variants,
              seed: int, log: Callable[[str], None] = print) -> list[Job]:
    """Every checkpoint x task x region x variant x seed + k, k < n_rollouts; a checkpoint
    trained for other tasks (its config's `tasks`) is not evaluated on a task it lacks."""
    from comsim_policy.checkpoint import load_config  # noqa: PLC0415

    jobs = []
    for ckpt, name in checkpoints.items():
        trained = list(getattr(load_config(ckpt), 'tasks', []) or [])
        for task in tasks:
            if trained and task not in trained:
                log(f'{name}: not evaluated on {task} (trained for {trained})')
                continue
            jobs += [Job(str(ckpt), name, task, region, variant, seed + k, k)
                     for region in regions for variant in variants
                     for k in range(int(n_rollouts))]
    return jobs


def worker_count(workers: int) -> int:
    return workers if workers > 0 else (os.cpu_count() or 1)


def evaluate_in_process(checkpoints: dict[Path, str], tasks, n_rollouts: int, regions, variants,
                        spec: WorkerSpec, *, seed: int, workers: int = 0,
                        log: Callable[[str], None] = print, resume: bool = False) -> Evaluation:
    """Run every job; `workers` = 1 runs them in this process, otherwise in that many spawned
    processes (0 = one per core). `out_dir/results.json` gets the table and paired tests.
    Every finished rollout is journalled in `out_dir` (`journal.RolloutJournal`); with
    `resume` the journalled ones (same weights, settings and seed) are not run again."""
    environment_class(spec.env)   # a bad name fails here, not in every worker
    out_dir = Path(spec.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = make_jobs(checkpoints, tasks, n_rollouts, regions, variants, seed, log)
    digests = {str(c): checkpoint_digest(c) for c in checkpoints}
    journal = RolloutJournal(out_dir, settings_digest(      # what can change an outcome
        {k: v for k, v in dataclasses.asdict(spec).items() if k not in RECORDING_ONLY}))

    def key(job: Job) -> str:
        return rollout_key(digests[job.checkpoint], job.task, job.region, job.variant, job.seed)

    journalled = journal.load() if resume else {}
    finished = {key(j): dataclasses.replace(journalled[key(j)], checkpoint=j.name)
                for j in jobs if key(j) in journalled}
    todo = [j for j in jobs if key(j) not in finished]
    if finished:
        log(f'resumed: {len(finished)} of {len(jobs)} rollouts from {journal.path}')
    n = min(worker_count(workers), max(len(todo), 1))

    def done(job: Job, r: Rollout) -> None:
        log(f'{r.checkpoint} {r.task} {r.region} {r.variant or "default"} seed={r.seed}: '
            f'{"success" if r.success else "failure"} ({r.message}) {r.sim_s} sim s, '
            f'{r.wall_s} wall s, {r.renders} renders')
        journal.append(key(job), r)
        finished[key(job)] = r

    if n <= 1:
        worker = Worker(spec) if todo else None
        try:
            for job in todo:
                done(job, worker.run(job))
        finally:
            if worker is not None:
                worker.env.close()
    else:
        ctx = multiprocessing.get_context('spawn')
        with ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker,
                                 initargs=(spec,)) as pool:
            for job, r in zip(todo, pool.map(_run_job, todo), strict=True):
                done(job, r)
    result = Evaluation([finished[key(j)] for j in jobs])
    result.save(out_dir / 'results.json')
    return result


def evaluate(checkpoint_dirs, cfg: EvaluationConfig,
             log: Callable[[str], None] = print) -> Evaluation:
    """`evaluate_in_process` as config/evaluation.yaml (or a replaced `cfg`) describes it: the
    environment from the bench lab node's parameters, the controller from the policy node's."""
    from comsim_policy.inference import limit_cpu_threads  # noqa: PLC0415

    limit_cpu_threads()   # workers = 1 runs here: one torch thread, as in the workers
    settings = RolloutSettings(cfg.latency_s, cfg.add_measured_latency, cfg.timeout_factor,
                               cfg.timeout_margin_s, cfg.check_every_s, cfg.settle_s,
                               cfg.stale_after_s)
    spec = WorkerSpec(cfg.env, node_parameters(cfg.lab_params, 'bench_lab', cfg.lab),
                      node_parameters(cfg.policy_params, 'policy', cfg.policy), settings,
                      str(cfg.out), cfg.saved_episodes, cfg.sheets)
    names = checkpoint_names([Path(c) for c in checkpoint_dirs])
    return evaluate_in_process(names, cfg.tasks, cfg.rollouts, cfg.regions,
                               ['' if v in ('', 'default') else v for v in cfg.variants], spec,
                               seed=cfg.seed, workers=cfg.workers, log=log,
                               resume=cfg.resume)
