"""nn modules: module."""
__all__ = []
