# Address reuse: many short-lived functions (compile/exec'd functions,
# lambdas with a file name each, closures made by exec'd code), each
# allocating once with the GIL released and then dropped at once, so that the
# next one's code object is likely to land at the same address. Every event's
# Python frames must name the function that made it (the runner checks all
# allocation events; the size says which function it was).
import ctypes
import sys
from gmr_case import rt_nogil, ptr, MiB

N = 300
BASE = {"exec": 100000, "lambda": 200000, "closure": 300000}
p = ptr()
seen = set()
reused = 0


def alloc_free(n):
    assert rt_nogil.cudaMalloc(ctypes.byref(p), n) == 0  # @site:alloc
    assert rt_nogil.cudaFree(p) == 0


def note(code):
    global reused
    if id(code) in seen:
        reused += 1
    seen.add(id(code))


def run_one(ns, name, size):
    f = ns[name]
    note(f.__code__)
    f(size)
    ns.clear()  # no cycle through the globals: the function dies here


def main():
    for i in range(N):
        src = "\n" * (i % 4) + "def fn_%04d(n):\n" % i + "\n" * (i % 3) + "    return alloc_free(n)\n"
        ns = {"alloc_free": alloc_free}
        exec(compile(src, "<reuse>", "exec"), ns)
        run_one(ns, "fn_%04d" % i, BASE["exec"] + i)

        ns = {"alloc_free": alloc_free}
        ns["lam"] = eval(compile("lambda n: alloc_free(n)", "<lambda-%04d>" % i, "eval"), ns)
        run_one(ns, "lam", BASE["lambda"] + i)

        src = ("def outer_%04d():\n" % i + "\n" * (i % 2) +
               "    def inner_%04d(n):\n        return alloc_free(n)\n    return inner_%04d\n" % (i, i))
        ns = {"alloc_free": alloc_free}
        exec(compile(src, "<closure>", "exec"), ns)
        ns["inner"] = ns["outer_%04d" % i]()
        del ns["outer_%04d" % i]
        run_one(ns, "inner", BASE["closure"] + i)
    print("REUSED %d of %d code objects" % (reused, len(seen) + reused))
    sys.stdout.flush()
    while True:  # out of memory (GIL released) for the dump
        q = ptr()
        if rt_nogil.cudaMalloc(ctypes.byref(q), MiB) != 0:  # @site:oom
            return


main()  # @site:module
