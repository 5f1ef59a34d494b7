"""Training of the neural simulator (condition dropout, EMA, accelerate)."""

from .dropout import ConditionMasks, sample_condition_masks
from .train import TrainResult, train

__all__ = ['ConditionMasks', 'TrainResult', 'sample_condition_masks', 'train']
