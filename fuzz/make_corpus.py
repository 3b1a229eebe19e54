#!/usr/bin/env python3
"""Writes the fuzz seed corpus (fuzz/corpus): tiny valid and broken IDX
files, plain and gzip. Deterministic: run it again to get the same bytes."""
import gzip
import os
import struct

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def idx(dims, data=None, type_code=0x08):
    size = 1
    for d in dims:
        size *= d
    if data is None:
        data = bytes((i * 37 + 11) & 255 for i in range(size))
    return bytes([0, 0, type_code, len(dims)]) + struct.pack(">%dI" % len(dims), *dims) + data


def gz(b):
    return gzip.compress(b, compresslevel=9, mtime=0)


seeds = {
    "idx1.idx": idx([10]),
    "idx3.idx": idx([3, 4, 5]),
    "idx3.gz": gz(idx([3, 4, 5])),
    "idx1.gz": gz(idx([10])),
    "idx8.idx": idx([1, 2, 1, 2, 1, 2, 1, 2]),
    "zero-dim.gz": gz(idx([0, 28, 28])),
    "two-members.gz": gz(idx([2, 3, 3])[:10]) + gz(idx([2, 3, 3])[10:]),
    "stored.gz": gzip.compress(idx([4, 4]), compresslevel=0, mtime=0),
    "truncated.idx": idx([3, 4, 5])[:30],
    "extra.gz": gz(idx([2, 2]) + b"\x01"),
    "float-type.idx": idx([2], data=b"\0" * 8, type_code=0x0D),
}

os.makedirs(here, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(data)
print("wrote %d seeds to %s" % (len(seeds), here))
