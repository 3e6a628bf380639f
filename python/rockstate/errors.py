"""Errors rockstate raises in Python; each message names the problem and the fix."""

from __future__ import annotations


class RockstateError(Exception):
    """Base class of rockstate's errors."""


class RockstateSetupError(RockstateError):
    """rockstate cannot run here: a missing jar, Java, or a pyspark version it was not built for."""


class CorruptCheckpointError(RockstateError):
    """A checkpoint file is missing, damaged, or not what its manifest says."""


class MissingCheckpointFileError(CorruptCheckpointError):
    """A file a checkpoint needs is not there (as opposed to there but unreadable)."""
