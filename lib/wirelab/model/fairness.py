"""Sharing one link: Jain's fairness index and the max-min fair share.

Sources: R. Jain, D. Chiu and W. Hawe, "A Quantitative Measure of Fairness
and Discrimination for Resource Allocation in Shared Computer Systems",
DEC-TR-301 (1984), §3: J(x) = (Σ xᵢ)² / (n · Σ xᵢ²), between 1/n (one user
gets everything) and 1 (all equal); xᵢ may be each user's throughput
divided by its fair allocation ("normalised"). Bertsekas & Gallager, *Data
Networks* (2nd ed.) §6.5.2: the max-min fair allocation by progressive
filling (no user can get more without taking from one that has less).

    >>> jain_index([5e6, 5e6])
    1.0
    >>> max_min_shares(10e6, [1e6, None, None])      # a 1 Mbit/s flow beside two greedy ones
    [1000000.0, 4500000.0, 4500000.0]
"""
from __future__ import annotations

import math

from ..errors import ModelError

__all__ = ["jain_index", "max_min_shares"]


def jain_index(values) -> float:
    """J = (Σx)² / (n·Σx²) over the values (Jain, Chiu & Hawe 1984, §3); NaN when there are
    none or all are zero. One value gives 1: a single flow is trivially fair to itself."""
    xs = [float(v) for v in values]
    if any(not math.isfinite(x) or x < 0 for x in xs):
        raise ModelError(f"fairness needs throughputs ≥ 0, not {values!r}", "drop failed flows first")
    total, squares = sum(xs), sum(x * x for x in xs)
    if not xs or squares == 0:
        return math.nan
    return total * total / (len(xs) * squares)


def max_min_shares(capacity: float, demands) -> list[float]:
    """Max-min fair shares of ``capacity`` among users wanting ``demands`` (None or inf:
    as much as they can get). Progressive filling (Bertsekas & Gallager §6.5.2): every
    unsatisfied user gets an equal part of what is left; users wanting less keep only
    what they want and give the rest back."""
    if not capacity > 0:
        raise ModelError(f"capacity must be positive, not {capacity!r}", "e.g. the link's η·C")
    wants = [math.inf if d is None else float(d) for d in demands]
    if any(not d >= 0 for d in wants):
        raise ModelError(f"demands must be ≥ 0, not {demands!r}", "use None for a greedy flow")
    shares = [0.0] * len(wants)
    open_users, left = set(range(len(wants))), float(capacity)
    while open_users and left > 1e-12 * capacity:
        equal = left / len(open_users)
        satisfied = {i for i in open_users if wants[i] - shares[i] <= equal}
        if not satisfied:                       # nobody is content with an equal part: split it
            for i in open_users:
                shares[i] += equal
            break
        for i in satisfied:
            left -= wants[i] - shares[i]
            shares[i] = wants[i]
        open_users -= satisfied
    return shares
