"""Compositional guidance and the sampling pipeline."""

from .guidance import MODES, GuidanceWeights, compose_joint, compose_scores, guided_prediction
from .pipeline import NeuralSimPipeline

__all__ = ['MODES', 'GuidanceWeights', 'NeuralSimPipeline', 'compose_joint', 'compose_scores',
           'guided_prediction']
