"""Fixed option grids shared by plans and controls: precisions, powers of two, contexts."""

from __future__ import annotations

PRECISIONS = (4, 8, 16, 32)
"""Storage precisions (bits) offered for weights and KV caches."""


def pow2(limit: float) -> list[int]:
    """1, 2, 4, ... up to ``limit`` (inclusive)."""
    out, d = [1], 2
    while d <= limit:
        out.append(d)
        d *= 2
    return out


def context_options(max_context: int, default: int, min_context: int = 256) -> list[int]:
    """Powers of two from ``min_context`` to ``max_context``, plus ``default``."""
    if not (1 <= min_context <= default <= max_context):
        raise ValueError(f"need min_context <= default <= max_context; got {min_context}, "
                         f"{default}, {max_context}")
    vals = {default, max_context}
    p = 1 << max(0, (min_context - 1).bit_length())
    while p <= max_context:
        vals.add(p)
        p <<= 1
    return sorted(v for v in vals if min_context <= v <= max_context)
