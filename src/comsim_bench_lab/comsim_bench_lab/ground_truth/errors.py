"""Why an episode cannot be given a ground truth: bad input, said in one line."""


class GroundTruthError(ValueError):
    """The episode cannot be given a ground truth (bad input); the message says why."""


class NotGeneratedError(GroundTruthError):
    """Not a complete episode written by the twin's generator."""


class MissingStreamError(GroundTruthError):
    """A topic the replay needs is absent."""


class CameraMismatchError(GroundTruthError):
    """A sim camera the bench lab does not have, or cannot render at the sim frames' size."""
