"""ember._logging: the switches of EMBER_LOGS from Python (torch._logging's set_logs)."""
from ._compile._log import enabled, set_logs  # noqa: F401

__all__ = ["set_logs", "enabled"]
