"""Structural comparison of library outputs, reporting the first difference by path.

NumPy arrays compare by shape and values (NaN equal to NaN), dicts by keys and values regardless
of order, sequences element-wise; floats within a relative tolerance when one is given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np


def first_difference(
    a: Any,
    b: Any,
    *,
    path: str = "",
    rtol: float = 0.0,
    atol: float = 0.0,
    ignore: Callable[[str], bool] | None = None,
) -> str | None:
    """None if ``a`` and ``b`` are equal; otherwise a path and a short description.

    ``ignore(path)`` skips volatile entries (wall-clock times)."""
    if ignore is not None and ignore(path):
        return None
    where = path or "<value>"
    if _is_tensor(a) or _is_tensor(b):
        a, b = _to_numpy(a), _to_numpy(b)
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
            return f"{where}: {type(a).__name__} vs {type(b).__name__}"
        if set(a.keys()) != set(b.keys()):
            only_a = sorted(map(str, set(a.keys()) - set(b.keys())))
            only_b = sorted(map(str, set(b.keys()) - set(a.keys())))
            return f"{where}: keys differ (only in first: {only_a}; only in second: {only_b})"
        for key in a:
            diff = first_difference(a[key], b[key], path=f"{path}[{key!r}]", rtol=rtol, atol=atol, ignore=ignore)
            if diff:
                return diff
        return None
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return _array_difference(a, b, where, path, rtol, atol, ignore)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))):
            return f"{where}: {type(a).__name__} vs {type(b).__name__}"
        if len(a) != len(b):
            return f"{where}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            diff = first_difference(x, y, path=f"{path}[{i}]", rtol=rtol, atol=atol, ignore=ignore)
            if diff:
                return diff
        return None
    if _is_number(a) and _is_number(b):
        fa, fb = float(a), float(b)
        if np.isnan(fa) and np.isnan(fb):
            return None
        if abs(fa - fb) <= atol + rtol * abs(fb):
            return None
        return f"{where}: {a!r} vs {b!r}"
    try:
        equal = bool(a == b)
    except Exception:
        equal = a is b
    return None if equal else f"{where}: {a!r} vs {b!r}"


def _array_difference(
    a: Any, b: Any, where: str, path: str, rtol: float, atol: float, ignore: Callable[[str], bool] | None
) -> str | None:
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.shape != b_arr.shape:
        return f"{where}: shape {a_arr.shape} vs {b_arr.shape}"
    if a_arr.dtype == object or b_arr.dtype == object:
        for index in np.ndindex(a_arr.shape):
            diff = first_difference(
                a_arr[index],
                b_arr[index],
                path=f"{path}[{','.join(map(str, index))}]",
                rtol=rtol,
                atol=atol,
                ignore=ignore,
            )
            if diff:
                return diff
        return None
    if a_arr.dtype == b_arr.dtype and np.array_equal(a_arr, b_arr, equal_nan=a_arr.dtype.kind in "fc"):
        return None  # equal arrays are equal within any tolerance (the common case, and fast)
    if a_arr.dtype.kind in "fc" or b_arr.dtype.kind in "fc":
        same = np.isclose(a_arr.astype(np.float64), b_arr.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    else:
        same = a_arr == b_arr
    if np.all(same):
        return None
    index = tuple(int(i) for i in np.argwhere(~np.asarray(same))[0])
    return f"{where}{list(index) if index else ''}: {a_arr[index]!r} vs {b_arr[index]!r}"


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.number)) and not isinstance(x, (bool, np.bool_))


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def _to_numpy(x: Any) -> Any:
    return x.detach().cpu().numpy() if _is_tensor(x) else x
