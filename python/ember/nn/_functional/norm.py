"""nn.functional: norm."""
__all__ = []
