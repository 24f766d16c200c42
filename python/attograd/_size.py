"""attograd.Size: a tensor's shape, a tuple of ints (torch.Size)."""


class Size(tuple):
    """The shape of a tensor: a tuple of ints that prints as ``attograd.Size([2, 3])``."""

    __slots__ = ()

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        n = 1
        for d in self:
            n *= d
        return n

    def __repr__(self) -> str:
        return f"attograd.Size({list(self)!r})"

    def __getitem__(self, index):
        r = tuple.__getitem__(self, index)
        return Size(r) if isinstance(index, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))
