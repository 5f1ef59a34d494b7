"""Exceptions of the neural simulator; all derive from ``NeuralSimError``."""

from __future__ import annotations

from comsim_core.errors import UserError


class NeuralSimError(UserError):
    """Base class: anything that stops the neural simulator from doing what was asked (bad
    input the user can fix: one line, exit code 2 from the console scripts)."""


class ConfigError(NeuralSimError, ValueError):
    """A config file or value is malformed (unknown key, wrong type, impossible shape)."""


class InputShapeError(NeuralSimError, ValueError):
    """A clip, frame stack or action array does not match the model's config."""


class MissingStreamError(NeuralSimError, KeyError):
    """A paired episode lacks the real or sim camera stream (or the command topic)."""

    def __str__(self) -> str:
        return str(self.args[0])


class CheckpointMismatchError(NeuralSimError, ValueError):
    """A checkpoint was written for a different model config than the one asked for."""


class AutoencoderNotFoundError(NeuralSimError, FileNotFoundError):
    """Latent space was asked for but the AutoencoderKL path does not exist."""
