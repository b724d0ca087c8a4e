"""How long a restarted process stays down: one number, or a spread each restart draws from.

A planner's question is rarely "what if every restart takes exactly 40 s" but "restarts take 30 to
60 s: how often will the roll rebalance?". A static member that is back within its session timeout
(less the time since its last heartbeat) costs nothing, one that is not costs a rebalance, so the
answer flips around the session timeout and a fixed number hides it. `--restart-ms` takes:

* ``40000``: every restart takes 40 s (a plain ``int``, as before: no draw at all, so a fixed
  value gives exactly the results it always gave);
* ``30000..60000``: uniform between the bounds, both included (``Uniform``);
* ``p50=30000,p99=60000``: a log-normal distribution through the two percentiles (``LogNormal``):
  restart times are positive and right-skewed (most are quick, a few wait for a slow host), which is
  what a log-normal describes with two numbers. Its tails are cut at the 0.01st and 99.99th
  percentiles, so every draw has a finite bound (``maximum``: the run's time cap uses it).

Each restart draws its own duration from the run's restart stream (``restart_random``: seeded by
``--seed``), so a run is repeatable. Every value is within 0..INT_MAX, as the fixed one is
(``SimParams.validate`` checks the values given; draws are clamped).
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from statistics import NormalDist

from kgroup.coordinator.config import INT_MAX

TAIL = 0.0001            # the log-normal's cut: below its 0.01st and above its 99.99th percentile
_STANDARD = NormalDist()


class RestartSpreadError(ValueError):
    """A --restart-ms value that is not one of the three forms, or contradicts itself."""


@dataclass(frozen=True)
class Uniform:
    """Every whole millisecond from ``low`` to ``high`` (both included) equally likely."""
    low: int
    high: int

    @property
    def minimum(self) -> int:
        return self.low

    @property
    def maximum(self) -> int:
        return self.high

    def given(self) -> tuple[int, ...]:
        return (self.low, self.high)

    def draw(self, rng: random.Random) -> int:
        return rng.randint(self.low, self.high)

    def __str__(self) -> str:
        return f"{self.low}..{self.high}"

    @property
    def family(self) -> str:
        return "uniform"


@dataclass(frozen=True)
class LogNormal:
    """ln(duration) is normal, fitted so that the two given percentiles hold exactly:
    sigma = (ln x_b - ln x_a) / (z_b - z_a), mu = ln x_a - sigma z_a (z: the standard normal's
    quantiles of the two levels). ``percentiles``: ((level, ms), (level, ms)), lower level first."""
    percentiles: tuple[tuple[float, int], tuple[float, int]]

    @property
    def sigma(self) -> float:
        (a, xa), (b, xb) = self.percentiles
        return (math.log(xb) - math.log(xa)) / (_z(b) - _z(a))

    @property
    def mu(self) -> float:
        (a, xa), _ = self.percentiles
        return math.log(xa) - self.sigma * _z(a)

    def quantile(self, q: float) -> int:
        """The duration below which a fraction ``q`` of restarts fall, in 0..INT_MAX."""
        return _clamp(math.exp(self.mu + self.sigma * _STANDARD.inv_cdf(q)))

    @property
    def minimum(self) -> int:
        return self.quantile(TAIL)

    @property
    def maximum(self) -> int:
        return self.quantile(1 - TAIL)

    def given(self) -> tuple[int, ...]:
        return tuple(ms for _, ms in self.percentiles)

    def draw(self, rng: random.Random) -> int:
        """Inverse transform over the kept part of the distribution (TAIL .. 1-TAIL)."""
        return self.quantile(TAIL + rng.random() * (1 - 2 * TAIL))

    def __str__(self) -> str:
        return ",".join(f"p{_level_text(level)}={ms}" for level, ms in self.percentiles)

    @property
    def family(self) -> str:
        return "log-normal"


RestartSpread = Uniform | LogNormal
Restart = int | RestartSpread      # what SimParams.restart_ms holds


def _z(level: float) -> float:
    return _STANDARD.inv_cdf(level / 100)


def _clamp(ms: float) -> int:
    return min(max(round(ms), 0), INT_MAX)


def _level_text(level: float) -> str:
    return f"{level:g}"


# ---- the option's text ------------------------------------------------------------------
_NUMBER = re.compile(r"-?\d+")
_RANGE = re.compile(r"(-?\d+)\s*\.\.\s*(-?\d+)")
_PERCENTILE = re.compile(r"p(\d+(?:\.\d+)?)=(-?\d+)")


def parse_restart(text: str) -> Restart:
    """``40000`` (an int), ``30000..60000`` or ``p50=30000,p99=60000``; RestartSpreadError saying
    what is wrong. The bound INT_MAX is SimParams.validate's (one rule for every timeout)."""
    value = text.strip()
    if _NUMBER.fullmatch(value):
        return _not_negative(int(value))
    match = _RANGE.fullmatch(value)
    if match:
        low, high = (_not_negative(int(g)) for g in match.groups())
        if low > high:
            raise RestartSpreadError(f"{value}: the lower bound ({low}) is above the upper one ({high})")
        return Uniform(low, high)
    if value.startswith("p"):
        return _percentiles(value)
    raise RestartSpreadError(f"{text!r}: expected MS, MIN..MAX or two percentiles such as "
                             "p50=30000,p99=60000")


def _not_negative(ms: int) -> int:
    if ms < 0:
        raise RestartSpreadError(f"must not be negative (got {ms})")
    return ms


def _percentiles(value: str) -> LogNormal:
    parts = [p.strip() for p in value.split(",")]
    found = []
    for part in parts:
        match = _PERCENTILE.fullmatch(part)
        if not match:
            raise RestartSpreadError(f"{part!r}: expected pLEVEL=MS, such as p99=60000")
        level, ms = float(match.group(1)), int(match.group(2))
        if not 0 < level < 100:
            raise RestartSpreadError(f"{part}: a percentile is above 0 and below 100")
        if ms < 1:
            raise RestartSpreadError(f"{part}: a percentile of a log-normal restart time is at least 1 ms")
        found.append((level, ms))
    if len(found) != 2:
        raise RestartSpreadError(f"{value}: give exactly two percentiles (such as p50=30000,p99=60000), "
                                 f"got {len(found)}")
    (a, xa), (b, xb) = sorted(found)
    if a == b:
        raise RestartSpreadError(f"{value}: p{_level_text(a)} is given twice")
    if xb <= xa:
        raise RestartSpreadError(f"{value}: p{_level_text(b)} ({xb}) must be above p{_level_text(a)} ({xa}); "
                                 "for one fixed restart time give a number")
    return LogNormal(((a, xa), (b, xb)))


# ---- what a run asks of it --------------------------------------------------------------
def given_values(restart: Restart) -> tuple[int, ...]:
    """The numbers the user gave (SimParams.validate holds them to 0..INT_MAX)."""
    return (restart,) if isinstance(restart, int) else restart.given()


def maximum(restart: Restart) -> int:
    """The longest a restart can take: where a run needs one bound (its time cap)."""
    return restart if isinstance(restart, int) else restart.maximum


def draw(restart: Restart, rng: random.Random) -> int:
    """One restart's duration; a fixed value draws nothing from ``rng``."""
    return restart if isinstance(restart, int) else restart.draw(rng)


def restart_random(seed: int) -> random.Random:
    """The stream restarts draw from: seeded by --seed but apart from the one that spreads heartbeat
    phases and the random order, so a spread changes the restart times and nothing else."""
    return random.Random(f"restart-ms {seed}")


def describe(restart: Restart) -> str:
    """``40000 ms``, ``30000..60000 ms (uniform)``, ``p50=30000,p99=60000 ms (log-normal)``."""
    if isinstance(restart, int):
        return f"{restart} ms"
    return f"{restart} ms ({restart.family})"
