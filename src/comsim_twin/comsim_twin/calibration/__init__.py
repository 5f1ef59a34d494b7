"""Camera calibration for the twin: intrinsics, extrinsics in the base frame, YAML I/O."""
from .board import ChessBoard, find_corners
from .errors import CalibrationError
from .extrinsics import ExtrinsicsResult, calibrate_extrinsics, solve_extrinsics
from .intrinsics import IntrinsicsResult, calibrate_from_corners, calibrate_intrinsics
from .io import load_twin_camera, read_camera_yaml, write_camera_yaml
from .pipeline import calibrate_from_bag
from .setup import CalibrationSetup, flat_board_pose, load_calibration_setup

__all__ = ['CalibrationError', 'CalibrationSetup', 'ChessBoard', 'ExtrinsicsResult',
           'IntrinsicsResult', 'calibrate_extrinsics', 'calibrate_from_bag',
           'calibrate_from_corners', 'calibrate_intrinsics', 'find_corners', 'flat_board_pose',
           'load_calibration_setup', 'load_twin_camera', 'read_camera_yaml', 'solve_extrinsics',
           'write_camera_yaml']
