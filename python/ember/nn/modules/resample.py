"""nn modules: resample."""
__all__ = []
