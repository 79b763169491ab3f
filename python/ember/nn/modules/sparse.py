"""nn modules: sparse."""
__all__ = []
