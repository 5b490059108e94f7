"""The few special functions the evaluators need, in numpy alone.

Why not ``scipy.special``: importing it costs ~0.23 s of CPU on top of numpy (its array-API
layer imports numpy.testing, numpy.f2py, unittest...), about a third of ``dse evaluate``'s
whole start-up, and the start-up target of issue 27 (half the round's start) cannot be met
with it on the path (benchmarks/RESULTS.md, "Start-up and install"). scipy stays the oracle:
tests/objectives/test_special.py compares every function here with ``scipy.special`` over wide
grids, extremes included, with the tolerance stated there.

Each function broadcasts; the iterative ones (series, continued fractions) iterate only the
elements not yet converged, so a batch costs what its slowest elements need, no more.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_EPS = np.finfo(float).eps
_TINY = 1e-300  # Lentz's guard against a zero denominator
_MAX_ITER = 100_000  # a safety net: the slowest case tested (a = 1e5, x = a) needs ~3,000
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)
_SQRT1_2 = np.sqrt(0.5)
_STIRLING_FROM = 10.0  # below, gammaln shifts its argument up by Gamma(x + 1) = x Gamma(x)


def _stirling_tail(x: np.ndarray) -> np.ndarray:
    """log Gamma(x) - [(x - 1/2) log x - x + log(2 pi)/2] for x >= 10: the Stirling series
    sum B_2k / (2k (2k - 1) x^(2k - 1)) to k = 7 (next term < 3e-17 x^-15, DLMF 5.11.1)."""
    r = 1.0 / x
    r2 = r * r
    return r * (
        1 / 12
        + r2
        * (
            -1 / 360
            + r2
            * (1 / 1260 + r2 * (-1 / 1680 + r2 * (1 / 1188 + r2 * (-691 / 360360 + r2 / 156))))
        )
    )


def gammaln(x: np.ndarray) -> np.ndarray:
    """log Gamma(x) for x > 0 (+inf at 0 and +inf): Stirling's series, after shifting
    x < 10 up with log Gamma(x) = log Gamma(x + n) - log(x (x + 1) ... (x + n - 1))."""
    x = np.asarray(x, dtype=float)
    y = np.array(x, copy=True)
    prod = np.ones_like(y)
    low = y < _STIRLING_FROM
    if low.any():  # only the small arguments are shifted (often a third of a batch or less)
        yl = y[low]
        steps = np.ceil(_STIRLING_FROM - yl)
        p = np.ones_like(yl)
        for j in range(int(_STIRLING_FROM)):
            p *= np.where(j < steps, yl + j, 1.0)
        prod[low], y[low] = p, yl + steps
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (y - 0.5) * np.log(y) - y + _HALF_LOG_2PI + _stirling_tail(y) - np.log(prod)
    return np.where(np.isposinf(x), np.inf, out)


def _log_gamma_prefix(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log(x^a e^-x / Gamma(a)), the factor in front of both incomplete gamma expansions.
    For a >= 10 it is written a (log(x/a) - t) + log(a / 2 pi) / 2 - stirling(a), t = x/a - 1,
    log(x/a) as log1p(t) near x = a, whose rounding error is ~eps |x - a| instead of
    ~eps a log x (1e-11 relative at a = 1e4)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        direct = a * np.log(x) - x - gammaln(a)
        big = a >= _STIRLING_FROM
        if not big.any():
            return direct
        safe_a = np.where(big, a, _STIRLING_FROM)
        t = (x - safe_a) / safe_a
        log_ratio = np.where(np.abs(t) < 0.5, np.log1p(t), np.log(x / safe_a))
        scaled = safe_a * (log_ratio - t) + 0.5 * np.log(safe_a / (2.0 * np.pi))
        return np.where(big, scaled - _stirling_tail(safe_a), direct)


def _iterate(
    state: list[np.ndarray], step: Callable[[int, list[np.ndarray]], np.ndarray], result: int
) -> np.ndarray:
    """Run ``step(i, rows)`` (updates the rows of the state in place, returns the converged
    mask) from i = 1 on the elements not yet converged, until all have; returns state[result].
    The state is one 2-D array, so dropping the converged elements is one copy per step."""
    shape = state[result].shape
    live = np.stack([np.ravel(s) for s in state]).astype(float)
    out = live[result].copy()
    idx = np.arange(out.size)
    for i in range(1, _MAX_ITER + 1):
        if idx.size == 0:
            break
        done = step(i, list(live))
        if done.any():
            out[idx[done]] = live[result, done]
            keep = ~done
            idx = idx[keep]
            live = live[:, keep]
    out[idx] = live[result]  # not converged (NaN inputs): as they stand
    return out.reshape(shape)


def _lower_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """sum_j x^j / (a (a + 1) ... (a + j)), so P(a, x) = prefix x this (DLMF 8.7.1)."""

    def step(_i: int, s: list[np.ndarray]) -> np.ndarray:
        ap, xs, term, total = s
        ap += 1.0
        term *= xs / ap
        total += term
        return ~(np.abs(term) >= np.abs(total) * _EPS)  # NaN counts as converged

    a, x = np.broadcast_arrays(a, x)
    start = 1.0 / a
    return _iterate([a, x, start, start], step, 3)


def _upper_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The continued fraction 1/(x + 1 - a - 1(1 - a)/(x + 3 - a - 2(2 - a)/(x + 5 - a - ...)))
    by Lentz's method, so Q(a, x) = prefix x this (DLMF 8.9.2), for x >= a + 1."""

    def step(i: int, s: list[np.ndarray]) -> np.ndarray:
        av, b, c, d, h = s
        an = -i * (i - av)
        b += 2.0
        d[:] = an * d + b
        d[np.abs(d) < _TINY] = _TINY
        c[:] = b + an / c
        c[np.abs(c) < _TINY] = _TINY
        d[:] = 1.0 / d
        delta = d * c
        h *= delta
        return ~(np.abs(delta - 1.0) >= _EPS)

    a, x = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(x, dtype=float))
    b = x + 1.0 - a
    with np.errstate(divide="ignore"):
        d = 1.0 / np.where(np.abs(b) < _TINY, _TINY, b)
    state = [a.copy(), b, np.full(a.shape, 1.0 / _TINY), d, d.copy()]
    return _iterate(state, step, 4)


def gammainc_pq(a: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The regularized incomplete gamma functions (P(a, x), Q(a, x) = 1 - P) for a > 0, x >= 0:
    the smaller side of the two computed directly (series below x = a + 1, continued fraction
    above, as Numerical Recipes 3rd ed. section 6.2), the other as its complement."""
    a, x = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(x, dtype=float))
    series = x < a + 1.0
    p = np.full(a.shape, np.nan)
    q = np.full(a.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        if series.any():
            aa, xx = a[series], x[series]
            ps = np.exp(_log_gamma_prefix(aa, xx)) * _lower_series(aa, xx)
            ps = np.where(xx == 0.0, 0.0, ps)
            p[series], q[series] = ps, 1.0 - ps
        cont = (x >= a + 1.0) & np.isfinite(x)
        if cont.any():
            aa, xx = a[cont], x[cont]
            qs = np.exp(_log_gamma_prefix(aa, xx)) * _upper_fraction(aa, xx)
            p[cont], q[cont] = 1.0 - qs, qs
    inf = (np.isposinf(x) & (a > 0)) | ((a == 0) & (x > 0))  # a = 0: the limit, as scipy
    p[inf], q[inf] = 1.0, 0.0
    bad = ~(a >= 0) | ~(x >= 0) | ((a == 0) & (x == 0))
    p[bad], q[bad] = np.nan, np.nan
    return p, q


def hyp1f1_one(b: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Kummer's M(1, b, z) = sum_j z^j / ((b)(b + 1)...(b + j - 1)) (DLMF 13.2.2), b > 0, z >= 0:
    the series, which converges fast where it is used (the Poisson far tail, z well below b)."""

    def step(_i: int, s: list[np.ndarray]) -> np.ndarray:
        bj, zs, term, total = s
        term *= zs / bj
        bj += 1.0
        total += term
        return ~(np.abs(term) >= np.abs(total) * _EPS)

    b, z = np.broadcast_arrays(np.asarray(b, dtype=float), np.asarray(z, dtype=float))
    one = np.ones(b.shape)
    return _iterate([b, z, one, one], step, 3)


def _beta_fraction(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The continued fraction of I_x(a, b) (DLMF 8.17.22) by Lentz's method, as Numerical
    Recipes 3rd ed. section 6.4 (``betacf``); converges fast for x < (a + 1)/(a + b + 2)."""

    def step(m: int, s: list[np.ndarray]) -> np.ndarray:
        av, bv, xv, c, d, h = s
        m2 = 2.0 * m
        for aa in (
            m * (bv - m) * xv / ((av - 1.0 + m2) * (av + m2)),
            -(av + m) * (av + bv + m) * xv / ((av + m2) * (av + 1.0 + m2)),
        ):
            d[:] = 1.0 + aa * d
            d[np.abs(d) < _TINY] = _TINY
            c[:] = 1.0 + aa / c
            c[np.abs(c) < _TINY] = _TINY
            d[:] = 1.0 / d
            delta = d * c
            h *= delta
        return ~(np.abs(delta - 1.0) >= _EPS)

    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
    state = [a.copy(), b.copy(), x.copy(), np.ones(a.shape), d, d.copy()]
    return _iterate(state, step, 5)


def betainc(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularized incomplete beta I_x(a, b) for a, b > 0, 0 <= x <= 1 (NaN elsewhere):
    the continued fraction on the side where it converges fast, I_x(a, b) = 1 - I_1-x(b, a)
    on the other."""
    a, b, x = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, x)))
    out = np.full(a.shape, np.nan)
    ok = (a > 0) & (b > 0) & (x >= 0) & (x <= 1)
    out[ok & (x == 0)] = 0.0
    out[ok & (x == 1)] = 1.0
    inner = ok & (x > 0) & (x < 1)
    if not inner.any():
        return out
    a, b, x = a[inner], b[inner], x[inner]
    flip = x > (a + 1.0) / (a + b + 2.0)
    aa, bb = np.where(flip, b, a), np.where(flip, a, b)
    xx = np.where(flip, 1.0 - x, x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        lg = gammaln(np.stack([a + b, a, b]))  # one call: most of a small batch's cost
        log_front = lg[0] - lg[1] - lg[2] + a * np.log(x) + b * np.log1p(-x)
        part = np.exp(log_front) * _beta_fraction(aa, bb, xx) / aa
    out[inner] = np.where(flip, 1.0 - part, part)
    return out


def _erfc_cody(y: np.ndarray) -> np.ndarray:
    """erfc(y) for y >= 0.46875 (W. J. Cody, Math. Comp. 23 (1969) 631-637, the coefficients
    of his CALERF, netlib specfun), exp(-y^2) split as in CALERF so y^2's rounding is exact."""
    out = np.zeros(y.shape)
    mid = y <= 4.0
    if mid.any():
        v = y[mid]
        num, den = 2.15311535474403846e-8 * v, v
        for c, d in zip(_C[:7], _D[:7], strict=True):
            num, den = (num + c) * v, (den + d) * v
        out[mid] = (num + _C[7]) / (den + _D[7])
    far = ~mid & np.isfinite(y)
    if far.any():
        v = y[far]
        r = 1.0 / (v * v)
        num, den = 1.63153871373020978e-2 * r, r
        for p, q in zip(_P[:4], _Q[:4], strict=True):
            num, den = (num + p) * r, (den + q) * r
        out[far] = (0.5641895835477562869 - r * (num + _P[4]) / (den + _Q[4])) / v
    with np.errstate(invalid="ignore", under="ignore"):
        sq = np.floor(16.0 * y) / 16.0
        return np.where(np.isfinite(y), np.exp(-sq * sq - (y - sq) * (y + sq)) * out, 0.0)


def _erf_small(x: np.ndarray) -> np.ndarray:
    """erf(x) for |x| <= 0.46875 (Cody 1969, first interval)."""
    t = x * x
    num, den = 1.85777706184603153e-1 * t, t
    for a, b in zip(_A[:3], _B[:3], strict=True):
        num, den = (num + a) * t, (den + b) * t
    return x * (num + _A[3]) / (den + _B[3])


def ndtr(z: np.ndarray) -> np.ndarray:
    """The standard normal distribution function, arranged as Cephes' ``ndtr`` (which scipy
    uses): 1/2 + erf(z/sqrt 2)/2 for |z| < 1, else erfc(|z|/sqrt 2)/2 and its complement."""
    z = np.asarray(z, dtype=float)
    x = z * _SQRT1_2
    ax = np.abs(x)
    out = np.full(z.shape, np.nan)
    centre = ax < _SQRT1_2
    if centre.any():
        xc = x[centre]
        small = np.abs(xc) <= 0.46875
        erf = np.empty(xc.shape)
        erf[small] = _erf_small(xc[small])
        rest = xc[~small]
        erf[~small] = np.sign(rest) * (1.0 - _erfc_cody(np.abs(rest)))
        out[centre] = 0.5 + 0.5 * erf
    tail = ax >= _SQRT1_2  # False for NaN
    if tail.any():
        y = 0.5 * _erfc_cody(ax[tail])
        out[tail] = np.where(x[tail] > 0, 1.0 - y, y)
    return out


# Cody (1969), CALERF's coefficient tables (netlib specfun/erf), as published.
_A = (
    3.16112374387056560e00,
    1.13864154151050156e02,
    3.77485237685302021e02,
    3.20937758913846947e03,
)
_B = (
    2.36012909523441209e01,
    2.44024637934444173e02,
    1.28261652607737228e03,
    2.84423683343917062e03,
)
_C = (
    5.64188496988670089e-1,
    8.88314979438837594e00,
    6.61191906371416295e01,
    2.98635138197400131e02,
    8.81952221241769090e02,
    1.71204761263407058e03,
    2.05107837782607147e03,
    1.23033935479799725e03,
)
_D = (
    1.57449261107098347e01,
    1.17693950891312499e02,
    5.37181101862009858e02,
    1.62138957456669019e03,
    3.29079923573345963e03,
    4.36261909014324716e03,
    3.43936767414372164e03,
    1.23033935480374942e03,
)
_P = (
    3.05326634961232344e-1,
    3.60344899949804439e-1,
    1.25781726111229246e-1,
    1.60837851487422766e-2,
    6.58749161529837803e-4,
)
_Q = (
    2.56852019228982242e00,
    1.87295284992346047e00,
    5.27905102951428412e-1,
    6.05183413124413191e-2,
    2.33520497626869185e-3,
)
