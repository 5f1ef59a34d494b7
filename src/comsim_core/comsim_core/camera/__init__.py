"""Camera geometry shared by the bench lab and the twin (one home, so both stay pixel-aligned).

- ``pinhole``: OpenCV intrinsics and point projection (cv2 conventions, plumb_bob distortion).
- ``distortion``: ``Lens``, the padded pinhole render size and the remap that applies distortion.
- ``mujoco_camera``: OpenCV calibration -> MuJoCo camera pose and intrinsics.
"""
from comsim_core.camera.distortion import Lens
from comsim_core.camera.mujoco_camera import (
    OPENCV_TO_MUJOCO,
    MujocoIntrinsics,
    configure_camera,
    mujoco_intrinsics,
    mujoco_pose,
)
from comsim_core.camera.pinhole import intrinsics, pose_matrix, project_points

__all__ = ['OPENCV_TO_MUJOCO', 'Lens', 'MujocoIntrinsics', 'configure_camera', 'intrinsics',
           'mujoco_intrinsics', 'mujoco_pose', 'pose_matrix', 'project_points']
