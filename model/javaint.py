"""Java's fixed-width integer arithmetic, where the mirrored code overflows on purpose or not."""

from __future__ import annotations


def int32(x: int) -> int:
    """`(int) x`, and the result of int arithmetic: wrapped into [-2^31, 2^31)."""
    return ((x + 2**31) % 2**32) - 2**31
