"""nn.functional: rnn."""
__all__ = []
