"""Stand-in for jax.profiler.device_memory_profile (jax/_src/profiler.py):
gzip-compressed pprof (google/pprof proto/profile.proto), as jaxlib's
heap profile builds it: sample types ("allocations", "count") and
("space", "bytes"); one sample per live buffer with values [1, bytes], the
label kind=buffer and device, and the locations of its Python stack
(innermost first), each location one line of a function (name, filename)."""
import gzip

from ._src import client


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num, wire, payload):
    key = _varint((num << 3) | wire)
    if wire == 0:
        return key + _varint(payload)
    return key + _varint(len(payload)) + payload


def _msg(fields):
    return b"".join(_field(n, w, p) for n, w, p in fields)


class _Strings:
    def __init__(self):
        self.table, self.index = [""], {"": 0}

    def __call__(self, s):
        if s not in self.index:
            self.index[s] = len(self.table)
            self.table.append(s)
        return self.index[s]


def device_memory_profile(backend=None):
    strings = _Strings()
    functions, locations, samples = {}, {}, []
    for buf in client.backend().live_buffers():
        loc_ids = []
        for fr in reversed(buf.stack):  # innermost first
            fkey = (fr.name, fr.filename)
            if fkey not in functions:
                functions[fkey] = (len(functions) + 1, strings(fr.name), strings(fr.filename))
            lkey = (fkey, fr.lineno)
            if lkey not in locations:
                locations[lkey] = (len(locations) + 1, functions[fkey][0], fr.lineno)
            loc_ids.append(locations[lkey][0])
        labels = [_msg([(1, 0, strings("kind")), (2, 0, strings("buffer"))]),
                  _msg([(1, 0, strings("device")), (2, 0, strings("cuda:0"))])]
        sample = _msg([(1, 2, b"".join(_varint(i) for i in loc_ids)), (2, 2, _varint(1) + _varint(buf.nbytes))]
                      + [(3, 2, lab) for lab in labels])
        samples.append(sample)
    out = [(1, 2, _msg([(1, 0, strings("allocations")), (2, 0, strings("count"))])),
           (1, 2, _msg([(1, 0, strings("space")), (2, 0, strings("bytes"))]))]
    out += [(2, 2, s) for s in samples]
    for (lid, fid, line) in locations.values():
        out.append((4, 2, _msg([(1, 0, lid), (4, 2, _msg([(1, 0, fid), (2, 0, line)]))])))
    for (fid, name, filename) in functions.values():
        out.append((5, 2, _msg([(1, 0, fid), (2, 0, name), (3, 0, name), (4, 0, filename)])))
    for s in strings.table:
        out.append((6, 2, s.encode()))
    return gzip.compress(_msg(out))
