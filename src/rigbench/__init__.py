"""rigbench: how fast, how good and how agent-ready is a local LLM rig."""

from rigbench._version import __version__
from rigbench.errors import RigbenchError

__all__ = ["RigbenchError", "__version__"]
