"""Hands gpumemrec_framework_oom() hostile reports (what a broken or foreign
caller could pass): each is refused (-1), nothing is written, the program
goes on. Then one good report: a framework_oom bundle (1)."""
import ctypes

fn = ctypes.CDLL(None).gpumemrec_framework_oom
fn.restype = ctypes.c_int
fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]

cases = [
    (None, 0, None, None, 0),                               # nothing
    (b"not json", 8, None, None, 0),                        # not JSON
    (b"[1,2]", 5, None, None, 0),                           # not an object
    (b'{"device":0}', 12, None, None, 0),                   # names no framework
    (b'{"framework":"torch"}', 21, b"../../etc/passwd", b"x", 1),  # a file name not ours
    (b'{"framework":"torch"}', 21, None, b"x", 1),          # state without a name
    (b'{"framework":"torch"', 20, None, None, 0),           # cut
]
for args in cases:
    print("refused" if fn(*args) == -1 else "ACCEPTED %r" % (args,))
good = b'{"framework":"torch","request_bytes":1024,"device":"zero","reserved_bytes":-5}'
print("good:", fn(good, len(good), b"framework_state.pickle", b"\x80\x04N.", 4))
