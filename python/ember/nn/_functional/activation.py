"""nn.functional: activation."""
__all__ = []
