#!/usr/bin/env python3
"""Writes the .npz/.npy fuzz seed corpus (fuzz/corpus_npz): tiny archives
as numpy.savez and savez_compressed lay them out (zip64 extras included),
bare .npy arrays of each version, and a few broken ones. Needs no NumPy.
Deterministic: run it again to get the same bytes."""
import io
import os
import struct
import zipfile

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_npz")


def npy(descr, shape, data, version=1):
    s = "(%s)" % (", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, s)
    pre = 10 if version == 1 else 12
    total = (pre + len(d) + 1 + 63) // 64 * 64
    d = d + " " * (total - pre - len(d) - 1) + "\n"
    head = b"\x93NUMPY" + bytes([version, 0])
    head += struct.pack("<H", len(d)) if version == 1 else struct.pack("<I", len(d))
    return head + d.encode("latin1") + data


def f32(*vals):
    return struct.pack("<%df" % len(vals), *vals)


def npz(entries, method=zipfile.ZIP_STORED, force_zip64=False):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", compression=method) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            with z.open(info, "w", force_zip64=force_zip64) as f:
                f.write(data)
    return b.getvalue()


w = npy("<f4", (2, 3), f32(1, 2, 3, 4, 5, 6))
b = npy("|u1", (4,), b"abcd")
spec = npy("|S5", (), b"lenet")
scalar = npy("<f4", (), f32(3.5))
seeds = {
    "stored.npz": npz([("w.npy", w), ("b.npy", b)]),
    "deflate.npz": npz([("w.npy", w), ("spec.npy", spec)], zipfile.ZIP_DEFLATED),
    "zip64.npz": npz([("w.npy", w)], force_zip64=True),
    "zip64-deflate.npz": npz([("m/w.npy", w), ("s.npy", scalar)], zipfile.ZIP_DEFLATED, True),
    "empty.npz": npz([]),
    "empty-array.npz": npz([("e.npy", npy("<f4", (0, 3), b""))]),
    "v1.npy": w,
    "v2.npy": npy("<f4", (3,), f32(1, 2, 3), version=2),
    "v3.npy": npy("|u1", (2, 2), b"wxyz", version=3),
    "short-data.npz": npz([("w.npy", w[:-4])], zipfile.ZIP_DEFLATED),
    "truncated.npz": npz([("w.npy", w)])[:-10],
}

os.makedirs(here, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(data)
print("wrote %d seeds to %s" % (len(seeds), here))
