"""Exception types shared by the Python layer."""


class ArgumentAssertionError(AssertionError, ValueError):
    """A bad argument where PyTorch raises AssertionError (MultiheadAttention's shape checks,
    Embedding's padding_idx, ...). It is an AssertionError, so code written for PyTorch still
    catches it, and a ValueError, which is what it is: ``except ValueError`` works and it is
    raised explicitly, so ``python -O`` cannot strip the check."""
