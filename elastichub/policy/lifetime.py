"""The session lifetime model the elastic rules reason with.

Sessions live L ~ normal(mean, sd) seconds (the paper: 60 min, SD 15). Pure
functions of a session's age: no I/O, no clock.
"""

from __future__ import annotations

import functools
import math


def expected_remaining_s(age_s: float, mean_s: float, sd_s: float) -> float:
    """E[L - a | L > a] for L ~ normal(mean, sd): how much longer a server
    that has run `age_s` seconds is expected to live. Past the mean it
    shrinks towards sd^2 / (age - mean) (the inverse Mills ratio), never 0."""
    if sd_s <= 0:
        return max(mean_s - age_s, 0.0)
    z = (age_s - mean_s) / sd_s
    tail = 0.5 * math.erfc(z / math.sqrt(2.0))
    if z > 8.0 or tail <= 0.0:  # far tail: asymptotic inverse Mills ratio
        mills = z + 1.0 / z
    else:
        mills = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi) / tail
    return max(sd_s * mills - (age_s - mean_s), 0.0)


@functools.lru_cache(maxsize=1 << 16)
def ending_within(age_s: int, span_s: float, mean_s: float, sd_s: float) -> float:
    """P(L <= age + span | L > age) for L ~ normal(mean, sd): the chance a
    session that has run `age_s` seconds ends within `span_s`. Cached: the
    simulator's ages are whole seconds and the live hub's are rounded."""
    if sd_s <= 0:
        return 1.0 if mean_s - age_s <= span_s else 0.0
    root2 = math.sqrt(2.0) * sd_s
    alive = math.erfc((age_s - mean_s) / root2)
    if alive <= 1e-300:
        return 1.0
    return max(0.0, 1.0 - math.erfc((age_s + span_s - mean_s) / root2) / alive)
