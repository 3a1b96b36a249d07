"""Python multiprocessing under LD_PRELOAD=libgpumemrec.so, standard library
only: the parent allocates through ctypes into the fake libcudart, then
children started with the given method (fork or spawn) allocate until out of
memory; each must write its own bundle. Prints CHILD pid=<pid> rc=<rc> lines
and DONE; exit 0 when every child reached the OOM."""
import ctypes
import multiprocessing as mp
import os
import sys


def cudart():
    return ctypes.CDLL("libcudart.so.13")


def child(queue, chunk):
    rt = cudart()
    p = ctypes.c_void_p()
    rc = 0
    for _ in range(1000):
        rc = rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(chunk))
        if rc != 0:
            break
    queue.put((os.getpid(), rc))


def main():
    method = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    chunk = 16 << 20
    rt = cudart()
    p = ctypes.c_void_p()
    rc = rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(chunk))  # the parent uses the GPU first
    print("PARENT pid=%d rc=%d" % (os.getpid(), rc), flush=True)
    ctx = mp.get_context(method)
    queue = ctx.Queue()
    procs = [ctx.Process(target=child, args=(queue, chunk)) for _ in range(n)]
    for pr in procs:
        pr.start()
    results = [queue.get(timeout=300) for _ in procs]  # only a hang reaches it (loaded machine)
    for pr in procs:
        pr.join(60)
    ok = True
    for pid, rc in results:
        print("CHILD pid=%d rc=%d" % (pid, rc), flush=True)
        ok = ok and rc == 2
    print("DONE", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
