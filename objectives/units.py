"""Unit conversions shared by the models (one home for each)."""

from __future__ import annotations

HOURS_PER_DAY = 24.0
HOURS_PER_YEAR = 365.25 * HOURS_PER_DAY
"""8,766 h: the Julian year of 365.25 days (IAU Style Manual, 1989; the light-year's year), i.e.
the mean calendar year over the four-year leap cycle. Cluster lifetimes (lifetime_years) and
failure rates per year span several years, leap days included; 8,760 (365 days) would drop
them (0.07 %)."""
SECONDS_PER_YEAR = HOURS_PER_YEAR * 3600.0
FIT_PER_HOUR = 1e-9
"""1 FIT = one failure per 1e9 device-hours (JEDEC JESD85)."""
