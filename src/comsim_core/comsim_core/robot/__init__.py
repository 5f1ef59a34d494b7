"""Robot kinematics shared by every stage.

Provides the default ComSim arm and RobotModel (FK, Jacobian, IK).
"""
from comsim_core.robot.model import (
                                       DEFAULT_ARM_PATH,
                                       IKError,
                                       IKResult,
                                       RobotModel,
                                       tool_down_rotation,
)

__all__ = ['DEFAULT_ARM_PATH', 'IKError', 'IKResult', 'RobotModel', 'tool_down_rotation']
