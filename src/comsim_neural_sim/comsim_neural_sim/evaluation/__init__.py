"""Evaluation of translated video: image metrics, action consistency, the paper's ablation,
translated generated episodes against bench-lab ground truth."""

from .ablation import ABLATION_MODES, AblationResult, run_ablation
from .consistency import action_consistency, motion_centroids
from .generated import GeneratedEvalResult, evaluate_generated
from .metrics import learned_metrics_note, video_metrics

__all__ = ['ABLATION_MODES', 'AblationResult', 'GeneratedEvalResult', 'action_consistency',
           'evaluate_generated', 'learned_metrics_note', 'motion_centroids', 'run_ablation',
           'video_metrics']
