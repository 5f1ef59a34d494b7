"""Evaluation of translated video: image metrics, action consistency (motion blobs; object
positions against ground truth), the paper's ablation, translated generated episodes against
bench-lab ground truth."""

from .ablation import ABLATION_MODES, AblationResult, run_ablation
from .consistency import action_consistency, motion_centroids
from .generated import GeneratedEvalResult, evaluate_generated
from .metrics import learned_metrics_note, video_metrics
from .positions import find_object, load_positions, object_errors

__all__ = ['ABLATION_MODES', 'AblationResult', 'GeneratedEvalResult', 'action_consistency',
           'evaluate_generated', 'find_object', 'learned_metrics_note', 'load_positions',
           'motion_centroids', 'object_errors', 'run_ablation', 'video_metrics']
