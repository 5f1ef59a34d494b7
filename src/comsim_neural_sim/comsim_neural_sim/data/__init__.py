"""Paired clips: from twin episodes, or synthetic ones for tests and benchmarks."""

from .clips import ClipDataset, PairedClip, load_paired_dir, load_paired_episode
from .frames import frames_to_tensor, resize_clip, tensor_to_frames
from .synthetic import synthetic_pair

__all__ = ['ClipDataset', 'PairedClip', 'frames_to_tensor', 'load_paired_dir',
           'load_paired_episode', 'resize_clip', 'synthetic_pair', 'tensor_to_frames']
