"""nn.functional: attention."""
__all__ = []
