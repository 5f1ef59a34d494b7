"""Training of the neural simulator (condition dropout, EMA, accelerate)."""

from .dropout import ConditionMasks, sample_condition_masks
from .ema import EMA
from .train import TrainResult, train

__all__ = ['EMA', 'ConditionMasks', 'TrainResult', 'sample_condition_masks', 'train']
