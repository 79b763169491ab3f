"""nn.functional: loss."""
__all__ = []
