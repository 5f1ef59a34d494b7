"""Exceptions of the episode reader; all derive from ``EpisodeError``."""

from __future__ import annotations


class EpisodeError(Exception):
    """Base class: anything that stops an episode from being read as asked."""


class EpisodeNotFoundError(EpisodeError, FileNotFoundError):
    """No episode (bag directory) at the given path."""


class CorruptEpisodeError(EpisodeError):
    """The bag is truncated or inconsistent; ``comsim-recover PATH`` may rebuild it."""

    def __init__(self, path: object, reason: str, *, recoverable: bool = True) -> None:
        hint = f'; try `comsim-recover {path}`' if recoverable else ''
        super().__init__(f'corrupt episode {path}: {reason}{hint}')
        self.path = path
        self.reason = reason


class MissingTopicError(EpisodeError, KeyError):
    """The requested topic is not in the episode."""

    def __init__(self, topic: str, available: list[str]) -> None:
        super().__init__(f'topic {topic!r} not in episode; available: {sorted(available)}')
        self.topic = topic
        self.available = sorted(available)

    def __str__(self) -> str:
        return str(self.args[0])


class WrongEncodingError(EpisodeError, ValueError):
    """An image encoding (or message type) the reader cannot turn into RGB."""


class AlignmentError(EpisodeError):
    """A frame's streams are further apart in time than the tolerance allows."""

    def __init__(self, message: str, gap_s: float) -> None:
        super().__init__(message)
        self.gap_s = gap_s
