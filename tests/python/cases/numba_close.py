# numba.cuda.close() while device arrays are still referenced, driven the way
# Numba's ctypes driver drives libcuda (numba/cuda/cudadrv/driver.py):
# - Driver._find_api: each function is getattr(lib, name + "_v2"), else
#   getattr(lib, name), on a ctypes.CDLL of libcuda (the GIL is released in
#   every call);
# - Device.get_primary_context: cuDevicePrimaryCtxRetain once per device
#   (Numba pushes it with cuCtxPushCurrent; the fake driver has
#   cuCtxSetCurrent, the same for one context);
# - device arrays: cuMemAlloc;
# - close() is Device.reset(): Context.reset() drops the context's records
#   without a cuMemFree (the memory manager's reset clears its dicts, and
#   _PendingDeallocs.clear() drops the pending frees), then
#   release_primary_context() (cuDevicePrimaryCtxRelease) and, in a finally,
#   cuDevicePrimaryCtxReset. The driver frees the arrays.
# Then a new context and arrays until out of memory (the driver hands the
# same addresses out again). Prints the addresses it held before close() as
# "HELD 0x...". run_case.py checks the bundle.
import ctypes
import os

from gmr_case import MiB


class Driver:
    def __init__(self):
        self.lib = ctypes.CDLL(os.environ["GMR_CUDA"])

    def _find_api(self, fname):
        for variant in ("_v2", ""):
            try:
                return getattr(self.lib, fname + variant)
            except AttributeError:
                pass
        raise AttributeError(fname)

    def __getattr__(self, fname):
        fn = self._find_api(fname)
        fn.restype = ctypes.c_int
        setattr(self, fname, fn)
        return fn


driver = Driver()


class Device:
    def __init__(self, ordinal):
        self.id = ctypes.c_int()
        assert driver.cuDeviceGet(ctypes.byref(self.id), ordinal) == 0
        self.primary_context = None

    def get_primary_context(self):
        if self.primary_context is None:
            ctx = ctypes.c_void_p()
            assert driver.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), self.id) == 0
            assert driver.cuCtxSetCurrent(ctx) == 0
            self.primary_context = ctx
        return self.primary_context

    def release_primary_context(self):
        if self.primary_context is not None:
            assert driver.cuDevicePrimaryCtxRelease(self.id) == 0  # @site:release
            self.primary_context = None

    def reset(self):
        try:
            self.release_primary_context()  # @site:reset
        finally:
            assert driver.cuDevicePrimaryCtxReset(self.id) == 0


def device_array(nbytes):
    p = ctypes.c_uint64()
    rc = driver.cuMemAlloc(ctypes.byref(p), ctypes.c_size_t(nbytes))  # @site:alloc
    return p.value if rc == 0 else None


def main():
    assert driver.cuInit(0) == 0
    dev = Device(0)
    dev.get_primary_context()
    held = [device_array(4 * MiB) for _ in range(3)]  # @site:held
    assert all(held)
    for p in held:
        print("HELD 0x%x" % p)
    dev.reset()  # numba.cuda.close()
    dev.get_primary_context()
    after = []
    while True:
        p = device_array(4 * MiB)  # @site:after
        if p is None:
            break
        after.append(p)
    print("OOM after %d arrays" % len(after))


main()
