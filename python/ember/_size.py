"""ember.Size: the type of `Tensor.shape`, a tuple of ints."""


class Size(tuple):
    """A tuple of dimension sizes, printed as ``ember.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self):
        return f"ember.Size([{', '.join(str(s) for s in self)}])"

    __str__ = __repr__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __reduce__(self):
        return (Size, (tuple(self),))
