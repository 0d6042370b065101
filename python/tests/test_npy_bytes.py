"""The .npy bytes the client streams: np.save's, from the array's own memory."""

import hashlib
import io

import numpy as np
import pytest

import lizard
from lizard._uploads import PIECE_BYTES, NpyBytes


def saved(array):
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


@pytest.mark.parametrize("array", [
    np.arange(12, dtype=np.float32).reshape(4, 3),
    np.float64(2.5),
    np.zeros((0, 3), dtype=np.int64),
    np.array([1, 2, 3], dtype=">i4"),
    np.arange(6, dtype=np.uint8),
])
def test_the_bytes_are_those_np_save_writes(array):
    npy = NpyBytes(array)
    assert b"".join(bytes(c) for c in npy.chunks()) == saved(array)
    assert npy.size == len(saved(array))


def test_the_data_is_a_view_of_the_array_not_a_copy():
    array = np.arange(1000, dtype=np.float64)
    npy = NpyBytes(array)
    array[7] = -1
    assert np.frombuffer(npy.data, dtype=np.float64)[7] == -1


def test_a_strided_array_goes_in_c_order():
    array = np.arange(12, dtype=np.int32).reshape(3, 4).T
    npy = NpyBytes(array)
    assert np.load(io.BytesIO(b"".join(bytes(c) for c in npy.chunks()))).tolist() == array.tolist()


def test_an_object_array_is_refused():
    with pytest.raises(lizard.LizardError, match="only plain numeric arrays"):
        NpyBytes(np.array([{}, 1], dtype=object))


def test_the_digest_is_over_16_mib_pieces_across_the_header():
    array = np.random.default_rng(0).integers(0, 255, size=2 * PIECE_BYTES + 99, dtype=np.uint8)
    data = saved(array)
    pieces = [hashlib.sha256(data[i:i + PIECE_BYTES]).digest()
              for i in range(0, len(data), PIECE_BYTES)]
    assert len(pieces) == 3
    assert NpyBytes(array).digest() == hashlib.sha256(b"".join(pieces)).hexdigest()
    changed = array.copy()
    changed[-1] ^= 1
    assert NpyBytes(changed).digest() != NpyBytes(array).digest()
