# Allocations from a coroutine (awaited from another coroutine under asyncio)
# and from a generator, which finally runs out of memory.
import asyncio
import ctypes
from gmr_case import rt, ptr, MiB


def alloc(n):
    p = ptr()
    return rt.cudaMalloc(ctypes.byref(p), n)  # @site:alloc


async def async_alloc(n):
    await asyncio.sleep(0)
    return alloc(n)  # @site:async_alloc


async def async_outer():
    rcs = []
    for _ in range(3):
        rcs.append(await async_alloc(2 * MiB))  # @site:async_outer
    return rcs


def gen_allocs(n):
    while True:
        yield alloc(n)  # @site:gen


def consume():
    for rc in gen_allocs(MiB):  # @site:consume
        if rc != 0:
            return rc


assert asyncio.run(async_outer()) == [0, 0, 0]
print("oom rc", consume())
