"""Ground truth for generated episodes: what the real lab would have filmed.

A sim episode written by the twin's generator (``comsim_twin.generation``: rosbag2 plus an
``episode.yaml`` whose ``metadata.randomisation`` holds the layout) has no real counterpart. The
bench lab can make one: it is set up with the episode's layout (task objects and distractors at
their initial poses, with the episode's shapes, sizes and colours; the move_card zone where the
episode's target puts it) and replays the episode's joint trajectory, rendering every camera
WITH the hidden realism profile at the sim frames' header stamps. The output is a paired episode
(``comsim_core.episodes.paired``): ``/real/...`` = bench-lab render (ground truth), ``/sim/...`` =
the sim episode's own frames, joint states and commands copied; so the neural simulator's
evaluation (``load_paired_dir``, ``run_ablation``, ``evaluation.generated``) reads it unchanged.
Frames are filmed at the sim frames' size; with ``native_size`` (``--native-size``) at the bench
cameras' own size instead, the sim frames resized to it, so a sim episode generated small (the
twin's ``image_scale``, to save disk) still gets full-resolution ground truth.

Replay is **kinematic**: at every physics step the arm is placed at the recorded joint
positions, linearly interpolated between joint-state stamps, moving at that segment's velocity;
the objects follow the bench lab's physics (its own friction and damping). The gripper alone is
driven by its actuator towards the recorded commands, because a finger placed where the sim's
finger stopped touches the object without squeezing it, and the grasped object slips out. Why not
dynamic replay of the commands: the bench lab's controller lag, damping and latency would put the
arm a few pixels away from the sim frames, and the metric would then score the sim/real
*dynamics* gap instead of the appearance gap that the neural simulator is asked to close. The
objects cannot be placed kinematically (a generated episode does not record their trajectories),
so they are simulated; ``object_drift_m`` in the sidecar says how far each ended from the sim's
final pose, i.e. how far the ground truth's object motion departs from the sim's.

Deliberately NOT copied from the episode: the twin's appearance randomisation (table texture and
colour, background, light scale) and its camera jitter. Ground truth is the real lab's own table,
lights and (true) cameras; that is what a translation should look like.

Where things truly are goes next to the bag, in ``positions.json`` (written before the episode is
marked complete; ``frame_positions``): per camera and frame stamp, each object's and the
gripper's projected centre through the camera the render used (lens distortion included), the
visible pixels from a segmentation render (occlusion by the arm included), their centroid, the
mean colour of the ground-truth frame over them and a few of their colours (the twin frame's
too). The neural simulator's evaluation reads it to find the objects in translated frames
without touching the bench lab.

The sidecar's typed metadata says what the episode is: ``source: gt``, the sim episode's task,
seed and region; its ``success`` is the bench lab's own check on the filmed motion (status
complete), so ``counts_as_success`` trusts only the lab's verdict.

    comsim-bench-lab-ground-truth SIM_EPISODE_OR_DIR ... --out DIR [--max-frames N] \
        [--rate-hz R] [--no-positions] [--workers N]
"""
from __future__ import annotations

from .cameras import lab_config_for
from .cli import find_sim_episodes, main
from .errors import CameraMismatchError, GroundTruthError, MissingStreamError, NotGeneratedError
from .layout import lab_objects
from .positions import POSITIONS_FILE, POSITIONS_FORMAT, colour_model, frame_positions
from .renderer import GroundTruthRenderer, GroundTruthResult, render_ground_truth
from .sim_episode import generated_metadata, kept_frames, select_frames

__all__ = ['POSITIONS_FILE', 'POSITIONS_FORMAT', 'CameraMismatchError', 'GroundTruthError',
           'GroundTruthRenderer', 'GroundTruthResult', 'MissingStreamError', 'NotGeneratedError',
           'colour_model', 'find_sim_episodes', 'frame_positions', 'generated_metadata',
           'kept_frames', 'lab_config_for', 'lab_objects', 'main', 'render_ground_truth',
           'select_frames']
