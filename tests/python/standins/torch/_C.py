"""Stand-in for torch._C's CUDA allocator bindings (tests only).

Follows c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator) closely
enough for the hook: rounding (round_size: 512 bytes), the two pools (small
up to 1 MiB, in 2 MiB segments; large: 20 MiB segments up to 10 MiB, else
rounded to 2 MiB: get_allocation_size), best-fit reuse of cached blocks,
splitting, and DeviceCachingAllocator::malloc's order on a miss:
alloc_block (cudaMalloc; refused without calling it past
set_per_process_memory_fraction's limit) -> release_available_cached_blocks
and retry -> release_cached_blocks and retry -> the OOM path: cudaMemGetInfo,
a copy of the observer list, the lock released ("observers might need to hold
the GIL"), each observer called as fn(device, alloc_size, device_total or the
fraction limit, device_free), then OutOfMemoryError.
torch/csrc/cuda/Module.cpp: _cuda_attach_out_of_memory_observer,
_cuda_memorySnapshot (the dict torch.cuda.memory._snapshot returns),
_cuda_record_memory_history.
_ImperativeEngine (torch/csrc/autograd/python_engine.cpp): the autograd
engine, in _autograd_engine.py over the native gmr_autograd_engine.c.
"""
import ctypes
import os
import threading
import time
import traceback

MiB = 1 << 20
kMinBlockSize = 512
kSmallSize = MiB
kSmallBuffer = 2 * MiB
kLargeBuffer = 20 * MiB
kMinLargeAlloc = 10 * MiB
kRoundLarge = 2 * MiB


class OutOfMemoryError(RuntimeError):
    """torch.OutOfMemoryError (torch._C.OutOfMemoryError)."""


_rt = None
_state = {"initialized": False, "observers": [], "allocator": None}


def _runtime():
    global _rt
    if _rt is None:
        rt = ctypes.CDLL(os.environ["GMR_CUDART"])  # releases the GIL in calls, as c10 does
        rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        rt.cudaFree.argtypes = [ctypes.c_void_p]
        rt.cudaMemGetInfo.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
        rt.cudaGetDeviceCount.argtypes = [ctypes.POINTER(ctypes.c_int)]
        _rt = rt
    return _rt


def _cuda_init():
    """torch._C._cuda_init: the runtime and the device (cudaGetDeviceCount)."""
    n = ctypes.c_int(0)
    if _runtime().cudaGetDeviceCount(ctypes.byref(n)) != 0 or n.value < 1:
        raise RuntimeError("no CUDA device")
    _state["allocator"] = DeviceCachingAllocator(0)
    _state["initialized"] = True


def _allocator():
    return _state["allocator"]


def _cuda_attach_out_of_memory_observer(fn):
    # The real binding reaches the allocator of a device that does not exist
    # yet before CUDA is initialized and crashes (pytorch issue 107330).
    if not _state["initialized"]:
        os.abort()
    _state["observers"].append(fn)


def _cuda_memorySnapshot(*args):
    return _allocator().snapshot()


def _cuda_record_memory_history(enabled, context, stacks, max_entries):
    _allocator().record_history(enabled, max_entries)


class Block:
    def __init__(self, segment, address, size):
        self.segment, self.address, self.size = segment, address, size
        self.requested = 0
        self.allocated = False


class Segment:
    def __init__(self, address, size, small):
        self.address, self.size, self.small = address, size, small
        self.blocks = [Block(self, address, size)]

    def allocated_bytes(self):
        return sum(b.size for b in self.blocks if b.allocated)

    def fully_free(self):
        return not any(b.allocated for b in self.blocks)


def round_size(size):
    return kMinBlockSize if size < kMinBlockSize else (size + kMinBlockSize - 1) // kMinBlockSize * kMinBlockSize


def get_allocation_size(size):
    if size <= kSmallSize:
        return kSmallBuffer
    if size < kMinLargeAlloc:
        return kLargeBuffer
    return (size + kRoundLarge - 1) // kRoundLarge * kRoundLarge


class DeviceCachingAllocator:
    def __init__(self, device):
        self.device = device
        self.lock = threading.Lock()  # c10: std::recursive_mutex mutex
        self.segments = []
        self.fraction = None
        self.history = None  # [entries], max
        self.history_max = 0
        self.peak_allocated = self.peak_reserved = 0  # memory_stats' allocated/reserved_bytes.all.peak

    # ---- DeviceCachingAllocator::malloc
    def malloc(self, orig_size):
        self.lock.acquire()
        try:
            size = round_size(orig_size)
            small = size <= kSmallSize
            alloc_size = get_allocation_size(size)
            block = (self._get_free_block(size, small) or self._alloc_block(alloc_size, small)
                     or (self._release_available_cached_blocks(alloc_size) and self._alloc_block(alloc_size, small))
                     or (self._release_cached_blocks() and self._alloc_block(alloc_size, small)))
            if block is None:
                free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
                _runtime().cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total))
                self._oom_observers(alloc_size, free.value, total.value)
                raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes." % alloc_size)
            return self._hand_out(block, size, small, orig_size)
        finally:
            self.lock.release()

    def _hand_out(self, block, size, small, orig_size):
        block = self._split(block, size, small)
        block.allocated, block.requested = True, orig_size
        self._trace("alloc", block.address, block.size)
        self.peak_allocated = max(self.peak_allocated, sum(s.allocated_bytes() for s in self.segments))
        return block

    def _oom_observers(self, alloc_size, free, total):
        """The OOM path after the last retry: called with self.lock held,
        released around the observers ("observers might need to hold the GIL")."""
        allowed = self._allowed() if self.fraction is not None else total
        self._trace("oom", 0, alloc_size)
        observers = list(_state["observers"])
        self.lock.release()
        try:
            for fn in observers:
                fn(self.device, alloc_size, allowed, free)
        finally:
            self.lock.acquire()

    # ---- the same steps for the native engine's thread (gmr_autograd_engine.c:
    # there cudaMalloc, its retries and cudaMemGetInfo run natively)
    def take_cached(self, orig_size):
        """(block, 0) from the cache, or (None, the segment size to cudaMalloc)."""
        with self.lock:
            size = round_size(orig_size)
            small = size <= kSmallSize
            block = self._get_free_block(size, small)
            if block is None:
                return None, get_allocation_size(size)
            return self._hand_out(block, size, small, orig_size), 0

    def release_for(self, level, alloc_size):
        """level 1: release_available_cached_blocks, 2: release_cached_blocks."""
        with self.lock:
            return self._release_available_cached_blocks(alloc_size) if level == 1 else self._release_cached_blocks()

    def place(self, address, alloc_size, orig_size):
        """A segment the engine's thread got from cudaMalloc, and the block in it."""
        with self.lock:
            size = round_size(orig_size)
            small = size <= kSmallSize
            return self._hand_out(self._add_segment(address, alloc_size, small), size, small, orig_size)

    def engine_oom(self, alloc_size, free, total):
        with self.lock:
            self._oom_observers(alloc_size, free, total)

    def free(self, block):
        with self.lock:
            block.allocated = False
            self._trace("free_completed", block.address, block.size)
            seg = block.segment
            merged = []
            for b in seg.blocks:  # merge neighbouring free blocks
                if merged and not merged[-1].allocated and not b.allocated:
                    merged[-1].size += b.size
                else:
                    merged.append(b)
            seg.blocks = merged

    def _get_free_block(self, size, small):
        best = None
        for seg in self.segments:
            if seg.small != small:
                continue
            for b in seg.blocks:
                if not b.allocated and b.size >= size and (best is None or b.size < best.size):
                    best = b
        return best

    def _split(self, block, size, small):
        rest = block.size - size
        if rest >= (kMinBlockSize if small else kSmallSize + 1):
            seg = block.segment
            i = seg.blocks.index(block)
            block.size = size
            seg.blocks.insert(i + 1, Block(seg, block.address + size, rest))
        return block

    def _allowed(self):
        total = ctypes.c_size_t(0)
        _runtime().cudaMemGetInfo(ctypes.byref(ctypes.c_size_t(0)), ctypes.byref(total))
        return int(total.value * self.fraction)

    def _alloc_block(self, size, small):
        # set_per_process_memory_fraction: refused here, no cudaMalloc.
        reserved = sum(s.size for s in self.segments)
        if self.fraction is not None and reserved + size > self._allowed():
            return None
        p = ctypes.c_void_p()
        if _runtime().cudaMalloc(ctypes.byref(p), size) != 0:
            return None
        return self._add_segment(p.value, size, small)

    def _add_segment(self, address, size, small):
        seg = Segment(address, size, small)
        self.segments.append(seg)
        self._trace("segment_alloc", seg.address, size)
        self.peak_reserved = max(self.peak_reserved, sum(s.size for s in self.segments))
        return seg.blocks[0]

    def _free_segment(self, seg):
        _runtime().cudaFree(seg.address)
        self.segments.remove(seg)
        self._trace("segment_free", seg.address, seg.size)

    def _release_available_cached_blocks(self, size):
        free = sorted((s for s in self.segments if s.fully_free() and not s.small), key=lambda s: s.size)
        fit = [s for s in free if s.size >= size]
        victims = fit[:1] if fit else list(reversed(free))
        released = 0
        for seg in victims:
            if released >= size:
                break
            self._free_segment(seg)
            released += seg.size
        return released >= size

    def _release_cached_blocks(self):
        for seg in [s for s in self.segments if s.fully_free()]:
            self._free_segment(seg)
        return True

    def empty_cache(self):
        with self.lock:
            self._release_cached_blocks()

    # ---- history and snapshot (torch/csrc/cuda/memory_snapshot.cpp's dict)
    def record_history(self, enabled, max_entries):
        with self.lock:
            self.history = [] if enabled else None
            self.history_max = max_entries

    def _trace(self, action, addr, size):
        if self.history is None:
            return
        frames = [{"filename": f.filename, "line": f.lineno, "name": f.name}
                  for f in reversed(traceback.extract_stack()[:-3])]
        self.history.append({"action": action, "addr": addr, "size": size, "stream": 0,
                             "time_us": int(time.time() * 1e6), "frames": frames})
        del self.history[:-self.history_max]

    def snapshot(self):
        if os.environ.get("STANDIN_BREAK") == "snapshot":
            raise RuntimeError("stand-in: _snapshot broken on purpose")
        with self.lock:  # a deadlock here if an observer ran with the lock held
            segments = []
            for s in self.segments:
                blocks = [{"address": b.address, "size": b.size, "requested_size": b.requested,
                           "state": "active_allocated" if b.allocated else "inactive", "frames": []}
                          for b in s.blocks]
                used = s.allocated_bytes()
                segments.append({"device": self.device, "address": s.address, "total_size": s.size,
                                 "allocated_size": used, "active_size": used,
                                 "requested_size": sum(b.requested for b in s.blocks if b.allocated), "stream": 0,
                                 "segment_type": "small" if s.small else "large", "segment_pool_id": (0, 0),
                                 "is_expandable": False, "frames": [], "blocks": blocks})
            return {"segments": segments, "device_traces": [list(self.history or [])],
                    "allocator_settings": {}}


from ._autograd_engine import _ImperativeEngine  # noqa: E402,F401  (python_engine.cpp's THPEngineType)
