"""Arrays fitted to their fields' dtypes before upload (no server needed)."""

import numpy as np
import pytest

from lizard._fields import fit_to_field
from lizard.errors import LizardError


def test_the_fields_own_dtype_is_sent_as_it_is():
    a = np.arange(6, dtype=np.float32)
    assert fit_to_field("x", a, "float32") is a


def test_casts_within_a_kind_when_every_value_fits():
    got = fit_to_field("x", np.array([1.5, -2.25, np.inf, np.nan]), "float32")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got[:3], [1.5, -2.25, np.inf])
    assert np.isnan(got[3])
    assert fit_to_field("n", np.array([1, -7], dtype=np.int64), "int32").dtype == np.int32
    assert fit_to_field("n", np.array([200], dtype=np.uint64), "uint8").dtype == np.uint8
    # Safe casts across kinds are taken too.
    assert fit_to_field("x", np.array([3], dtype=np.int16), "float64").dtype == np.float64
    assert fit_to_field("x", np.zeros((0, 2)), "float32").shape == (0, 2)


def test_values_that_do_not_fit_are_named():
    with pytest.raises(LizardError, match=r"dataset field 'x' is float32; the float64 array "
                                          r"holds -?1e\+40, which does not fit float32"):
        fit_to_field("x", np.array([1.0, -1e40]), "float32")
    with pytest.raises(LizardError, match=r"holds 3000000000, which does not fit int32"):
        fit_to_field("n", np.array([1, 3_000_000_000], dtype=np.int64), "int32")
    with pytest.raises(LizardError, match=r"holds 256, which does not fit uint8"):
        fit_to_field("n", np.array([256, 2], dtype=np.uint16), "uint8")


def test_another_kind_is_refused():
    with pytest.raises(LizardError, match=r"dataset field 'n' is int32; a float64 array cannot "
                                          r"become int32 without losing its kind of value"):
        fit_to_field("n", np.array([1.0, 2.0]), "int32")
    with pytest.raises(LizardError, match=r"an int64 array cannot become uint8"):
        fit_to_field("n", np.array([1, 2]), "uint8")
