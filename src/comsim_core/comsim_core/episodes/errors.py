"""Exceptions of the episode reader; all derive from ``EpisodeError``.

They are the user's to fix (a damaged bag, a topic that was not recorded), so ``EpisodeError`` is
a ``UserError``: console scripts print the one line naming the episode, not a traceback.
"""

from __future__ import annotations

from ..errors import UserError


class EpisodeError(UserError):
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
    """The requested topic is not in the episode (names the episode, the topic, what is there)."""

    def __init__(self, topic: str, available: list[str], path: object = None) -> None:
        where = f'{path}: ' if path is not None else ''
        super().__init__(f'{where}topic {topic!r} not in episode; topics found: '
                         f'{sorted(available)}')
        self.topic = topic
        self.available = sorted(available)
        self.path = path

    def __str__(self) -> str:
        return str(self.args[0])


class WrongEncodingError(EpisodeError, ValueError):
    """An image encoding (or message type) the reader cannot turn into RGB."""


class CorruptImageError(EpisodeError, ValueError):
    """An image whose data does not fit its header (size, step) or does not decode; names
    where it came from (a topic, or ``episode:topic``)."""


class AlignmentError(EpisodeError):
    """A frame's streams are further apart in time than the tolerance allows."""

    def __init__(self, message: str, gap_s: float) -> None:
        super().__init__(message)
        self.gap_s = gap_s


class BagWriterError(Exception):
    """The bag writer cannot do what was asked (unknown distro or type, existing path, write
    failure); the recorder and the episode writers turn it into their own errors."""
