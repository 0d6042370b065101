"""Arrays made to fit a program's fields before they are uploaded.

    fit_to_field("points", array, "float32")   # the array, converted if need be

An array of the field's dtype is sent as it is. Another dtype is converted
when numpy casts it within its kind (float64 -> float32, int64 -> int32; not
signed to unsigned) or safely (int16 -> float64) and every value fits the field's type; otherwise a
LizardError names the field, both dtypes and what to do, before anything
is uploaded.
"""

import numpy as np

from .errors import LizardError


def _out_of_range(array, target):
    """A value of `array` that the dtype `target` cannot hold, or None."""
    if array.size == 0:
        return None
    if np.issubdtype(target, np.floating):
        finite = array[np.isfinite(array)] if np.issubdtype(array.dtype, np.floating) else array
        if finite.size == 0:
            return None
        biggest = finite.flat[np.argmax(np.abs(finite))]
        return biggest.item() if abs(biggest) > np.finfo(target).max else None
    if np.issubdtype(target, np.integer):
        info = np.iinfo(target)
        low, high = array.min().item(), array.max().item()
        if low < info.min:
            return low
        if high > info.max:
            return high
    return None


def fit_to_field(name, array, dtype_name):
    """`array` as the field `name` of dtype `dtype_name` takes it."""
    target = np.dtype(dtype_name)
    if array.dtype == target:
        return array
    what = f"dataset field {name!r} is {target.name}"
    if not np.can_cast(array.dtype, target, "same_kind"):
        article = "an" if array.dtype.name[0] in "aeio" else "a"
        raise LizardError(f"{what}; {article} {array.dtype.name} array cannot become {target.name} "
                          f"without losing its kind of value (convert it yourself, e.g. "
                          f"array.astype(np.{target.name}), if that is what you mean)")
    if not np.can_cast(array.dtype, target, "safe"):
        bad = _out_of_range(array, target)
        if bad is not None:
            raise LizardError(f"{what}; the {array.dtype.name} array holds {bad!r}, which does "
                              f"not fit {target.name}")
    return array.astype(target)
