"""Compare generated text files number by number, with a stated tolerance.

Golden results (CSV, JSON, Markdown, HTML with embedded plotly data) are regenerated on other
machines, where BLAS kernels and CPU features change the last bits of floats
(``0.35404397213303707`` vs ``0.3540439721330371``). The text between numbers must match exactly;
each number must match within ``REL_TOL`` relative, or within one unit of the last decimal
printed when that unit is at most ``ROUNDING_REL`` of the value (a rounded figure such as ``3.37``
may flip to ``3.38`` when the true value sits on a rounding boundary; ``0.5`` never becomes
``0.6``).
"""

from __future__ import annotations

import base64
import math
import re

import numpy as np

__all__ = ["REL_TOL", "first_difference"]

#: Relative tolerance for every number in a golden file.
REL_TOL = 1e-6
#: A one-unit change in the last printed digit is accepted only up to this relative size.
ROUNDING_REL = 0.01

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|NaN|-?Infinity|-?inf|nan")


# plotly writes numeric arrays as base64 typed arrays ("bdata"), in either key order.
_BDATA = re.compile(
    r'"dtype":"(?P<d1>\w+)","bdata":"(?P<b1>[^"]*)"|"bdata":"(?P<b2>[^"]*)","dtype":"(?P<d2>\w+)"'
)


def _expand_bdata(text: str) -> str:
    """Decode plotly's base64 typed arrays into decimal lists, so they compare number by number."""

    def decode(m: re.Match[str]) -> str:
        dtype = m.group("d1") or m.group("d2")
        raw = (m.group("b1") if m.group("b1") is not None else m.group("b2")) or ""
        raw = raw.replace("\\u002f", "/").replace("\\u002b", "+").replace("\\/", "/")
        values = np.frombuffer(base64.b64decode(raw), dtype=np.dtype(dtype).newbyteorder("<"))
        return f'"dtype":"{dtype}","values":[{",".join(repr(v.item()) for v in values)}]'

    return _BDATA.sub(decode, text)


def _places(token: str) -> int:
    if "e" in token.lower() or "." not in token:
        return 0
    return len(token.split(".", 1)[1])


def _close(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or math.isinf(y):
        return False
    places = min(_places(a), _places(b))
    last_digit = 10.0**-places * 1.000001 if places else 0.0
    scale = max(abs(x), abs(y))
    if abs(x - y) <= REL_TOL * scale:
        return True
    return abs(x - y) <= last_digit and abs(x - y) <= ROUNDING_REL * scale


def first_difference(expected: str, actual: str) -> str | None:
    """``None`` when the texts agree within tolerance, else a short description of where not."""
    expected, actual = _expand_bdata(expected), _expand_bdata(actual)
    text_e, text_a = _NUMBER.split(expected), _NUMBER.split(actual)
    nums_e, nums_a = _NUMBER.findall(expected), _NUMBER.findall(actual)
    if len(text_e) != len(text_a):
        return f"different number of numeric fields ({len(nums_e)} vs {len(nums_a)})"
    for i, (te, ta) in enumerate(zip(text_e, text_a, strict=True)):
        if te != ta:
            return f"text differs near field {i}: {te[-60:]!r} vs {ta[-60:]!r}"
    for i, (ne, na) in enumerate(zip(nums_e, nums_a, strict=True)):
        if not _close(ne, na):
            context = text_e[i][-60:]
            return f"number {i} after {context!r}: {ne} vs {na}"
    return None
