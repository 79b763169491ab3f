"""nn modules: normalization."""
__all__ = []
