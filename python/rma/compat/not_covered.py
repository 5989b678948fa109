"""What the mpi4py facade answers for a call it does not cover: NotImplementedError naming the
call (also an AttributeError, so that hasattr() and getattr(obj, name, default) behave)."""

from __future__ import annotations

__all__ = ["NotCoveredError", "NotCovered"]


class NotCoveredError(NotImplementedError, AttributeError):
    """An mpi4py call that rma.compat does not provide."""


class NotCovered:
    """Base of the facade's classes: an mpi4py method name they lack raises NotCoveredError."""

    def __getattr__(self, name: str):
        if name[:1].isupper():
            raise NotCoveredError(
                f"rma.compat: {type(self).__name__}.{name} is not covered by rma's mpi4py facade "
                "(see the porting guide for what is)"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
