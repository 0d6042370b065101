"""Data from the user's hand on its way to the server.

NpyBytes is an array's .npy file without a copy of the array: the header,
then a memoryview of the array's own buffer, sent in large chunks. Its
digest is the one the server computes while receiving (src/common/
piece_digest.h): the SHA-256 of the SHA-256s of the bytes' 16 MiB pieces,
hashed here on every core. KeptUploads is a Client's account of the uploads
it made of arrays given to its runs, kept so that the same bytes given again
are not sent again.

    npy = NpyBytes(array)
    conn.request("POST", "/datasets", npy.chunks(), length=npy.size)
    npy.digest()  # == the answer's "digest"
"""

import collections
import hashlib
import io
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .errors import LizardError

PIECE_BYTES = 16 << 20  # as PieceDigest::kPieceBytes
SEND_BYTES = 16 << 20


class NpyBytes:
    """The .npy file of `array` (a C-contiguous copy only when it is not one)."""

    def __init__(self, array):
        array = np.asarray(array)
        if array.dtype.hasobject:
            raise LizardError(f"cannot upload an array of {array.dtype}: only plain numeric "
                              "arrays go as .npy")
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        self.array = array  # holds the buffer `data` views
        self.header = _npy_header(array)
        self.data = memoryview(array.reshape(-1).view(np.uint8))
        self.size = len(self.header) + self.data.nbytes

    def chunks(self):
        """The bytes in order, as memoryviews of at most SEND_BYTES."""
        yield self.header
        for at in range(0, self.data.nbytes, SEND_BYTES):
            yield self.data[at:at + SEND_BYTES]

    def digest(self):
        """The digest of the bytes, as the server's answer gives it (hex)."""
        pieces = (self.size + PIECE_BYTES - 1) // PIECE_BYTES
        if pieces <= 1:
            digests = [self._piece(i) for i in range(pieces)]
        else:
            with ThreadPoolExecutor(min(pieces, os.cpu_count() or 1)) as pool:
                digests = list(pool.map(self._piece, range(pieces)))  # hashlib frees the GIL
        return hashlib.sha256(b"".join(digests)).hexdigest()

    def _piece(self, i):
        begin, end = i * PIECE_BYTES, min((i + 1) * PIECE_BYTES, self.size)
        h = hashlib.sha256()
        n = len(self.header)
        if begin < n:
            h.update(self.header[begin:min(end, n)])
        if end > n:
            h.update(self.data[max(begin - n, 0):end - n])
        return h.digest()


def _npy_header(array):
    """The .npy header np.save writes before `array`'s bytes."""
    fields = np.lib.format.header_data_from_array_1_0(array)
    buf = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(buf, fields)
    except ValueError:  # a header over 64 KiB
        np.lib.format.write_array_header_2_0(buf, fields)
    return buf.getvalue()


def file_chunks(f, size):
    """The first `size` bytes of file `f`, read in large blocks into one buffer."""
    block = bytearray(min(SEND_BYTES, max(size, 1)))
    view = memoryview(block)
    left = size
    while left > 0:
        n = f.readinto(view[:min(left, len(block))])
        if not n:
            raise LizardError(f"{f.name}: the file ended {left} bytes early")
        left -= n
        yield view[:n]


class KeptUploads:
    """The uploads a Client made of arrays given to its runs. For each
    dataset field the latest stays on the server, for the same bytes given
    again; an earlier one is deleted once no unfinished run of the client
    uses it, and the rest when the client closes."""

    def __init__(self):
        self.made = set()
        self.latest = {}  # dataset field -> upload id
        self.users = collections.Counter()  # upload id -> unfinished runs using it

    def given(self, field, dataset_id):
        """`dataset_id` is now the upload of `field`; returns those to delete."""
        previous = self.latest.get(field)
        self.latest[field] = dataset_id
        return self._unneeded([previous] if previous else [])

    def hold(self, ids):
        self.users.update(ids)

    def release(self, ids):
        """The runs using `ids` have finished; returns those to delete."""
        for dataset_id in ids:
            self.users[dataset_id] -= 1
        return self._unneeded(ids)

    def unused(self):
        """Every upload made that no unfinished run uses (at close)."""
        return [i for i in self.made if self.users[i] <= 0]

    def forget(self, ids):
        for dataset_id in ids:
            self.made.discard(dataset_id)
            self.users.pop(dataset_id, None)
            for field in [f for f, i in self.latest.items() if i == dataset_id]:
                del self.latest[field]

    def _unneeded(self, ids):
        wanted = set(self.latest.values())
        return [i for i in set(ids) if i in self.made and i not in wanted and self.users[i] <= 0]
