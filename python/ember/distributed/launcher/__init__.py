"""The launcher behind emberrun (torch.distributed.launcher)."""
from .api import LaunchConfig, elastic_launch, launch_agent  # noqa: F401
