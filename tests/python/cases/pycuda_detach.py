# A PyCUDA program that lets a context go while it still holds device
# memory, driven the way PyCUDA drives libcuda (src/cpp/cuda.hpp; PyCUDA
# links libcuda, ctypes stands in for the extension here, so the GIL is
# released in every call, as PyCUDA's CUDAPP_CALL_GUARDED_THREADED does for
# the slow calls):
# - Device.make_context: context::prepare_context_switch (pops the current
#   context, if the thread's context stack has one, with cuCtxPopCurrent),
#   then cuCtxCreate (the _v2 ABI of the CUDA 11/12 headers PyCUDA's wheels
#   are built with) and a push onto PyCUDA's own context stack;
# - mem_alloc: cuMemAlloc (_v2), a DeviceAllocation;
# - Context.pop: prepare_context_switch (cuCtxPopCurrent), the use count
#   decremented, PyCUDA's stack popped;
# - Context.detach (also what ~context does): not current, same thread, so
#   cuCtxPushCurrent then context::detach_internal, which is cuCtxDetach
#   ("pop is implicit in detach"); the last use destroys the context, and
#   the driver frees what was allocated in it.
# The DeviceAllocations of the detached context are dropped (their free
# would meet a dead context, CUDAPP_CATCH_CLEANUP_ON_DEAD_CONTEXT). Then a
# new context and arrays until out of memory. Prints the addresses the first
# context held as "HELD 0x..."; run_case.py checks the bundle.
import ctypes
import os

from gmr_case import MiB

cuda = ctypes.CDLL(os.environ["GMR_CUDA"])
for name in ("cuInit", "cuDeviceGet", "cuCtxCreate_v2", "cuCtxPopCurrent_v2", "cuCtxPushCurrent_v2", "cuCtxDetach",
             "cuMemAlloc_v2"):
    getattr(cuda, name).restype = ctypes.c_int


class Context:
    stack = []  # PyCUDA's per-thread context_stack

    def __init__(self, handle):
        self.handle = handle
        self.use_count = 1
        self.valid = True

    @staticmethod
    def prepare_context_switch():
        if Context.stack:
            popped = ctypes.c_void_p()
            assert cuda.cuCtxPopCurrent_v2(ctypes.byref(popped)) == 0

    def pop(self):
        Context.prepare_context_switch()
        self.use_count -= 1
        Context.stack.pop()

    def detach(self):
        assert self.valid
        assert cuda.cuCtxPushCurrent_v2(self.handle) == 0
        assert cuda.cuCtxDetach(self.handle) == 0  # @site:detach
        self.valid = False


class Device:
    def __init__(self, ordinal):
        self.handle = ctypes.c_int()
        assert cuda.cuDeviceGet(ctypes.byref(self.handle), ordinal) == 0

    def make_context(self, flags=0):
        Context.prepare_context_switch()
        ctx = ctypes.c_void_p()
        assert cuda.cuCtxCreate_v2(ctypes.byref(ctx), flags, self.handle) == 0
        result = Context(ctx)
        Context.stack.append(result)
        return result


def mem_alloc(nbytes):
    p = ctypes.c_uint64()
    rc = cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(nbytes))  # @site:alloc
    return p.value if rc == 0 else None


def solve_once(dev):
    ctx = dev.make_context()
    held = [mem_alloc(4 * MiB) for _ in range(3)]  # @site:held
    assert all(held)
    for p in held:
        print("HELD 0x%x" % p)
    ctx.pop()
    ctx.detach()  # @site:solve


def main():
    assert cuda.cuInit(0) == 0
    dev = Device(0)
    solve_once(dev)
    ctx = dev.make_context()
    after = []
    while True:
        p = mem_alloc(4 * MiB)  # @site:after
        if p is None:
            break
        after.append(p)
    print("OOM after %d arrays" % len(after))
    ctx.pop()


main()
