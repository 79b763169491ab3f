"""nn.functional: misc."""
__all__ = []
