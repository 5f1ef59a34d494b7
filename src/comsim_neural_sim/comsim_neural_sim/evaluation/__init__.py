"""Evaluation of translated video: image metrics, action consistency, the paper's ablation."""

from .ablation import ABLATION_MODES, AblationResult, run_ablation
from .consistency import action_consistency, motion_centroids
from .metrics import learned_metrics_note, video_metrics

__all__ = ['ABLATION_MODES', 'AblationResult', 'action_consistency', 'learned_metrics_note',
           'motion_centroids', 'run_ablation', 'video_metrics']
