# A training step's backward in the shape of PyTorch's (cases/autograd_shape):
# train_step -> torch.autograd.backward -> graph._engine_run_backward -> the
# native engine (GIL released), whose engine thread runs MmBackward0::apply
# and calls cudaMalloc until out of memory. argv[1] picks the scenario
# (tests/python/run_backward.py checks the bundle):
#   oom        the one waiting thread lends its frames
#   ambiguous  a second Python thread waits in backward too
#   not_torch  a thread waits in backward while a native thread that is not
#              PyTorch's allocates until out of memory
#   churn      Python threads start, run Python and end all the time while
#              the engine thread allocates and frees, then runs out
#   hook_library  the engine thread runs a library's gradient hook (Python,
#              under site-packages: gmr_zero) that allocates until out of
#              memory: the waiting thread's frames are the hook's callers
#   hook_user  the same with the program's own hook
#   python_thread  a thread waits in backward while a thread of the
#              threading module allocates until out of memory: nothing is
#              borrowed (its own frames start at threading's bootstrap)
import ctypes
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "autograd_shape", "site-packages"))
import torch.autograd  # noqa: E402  (the fixture, not PyTorch)
from torch.autograd import graph  # noqa: E402

MiB = 1 << 20
engine = ctypes.CDLL(os.environ["GMR_AUTOGRAD_ENGINE"])  # CDLL: the GIL is released in calls
engine.gmr_engine_run_backward.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
assert engine.gmr_engine_init(os.environ["GMR_CUDART"].encode()) == 0
graph.Variable._execution_engine.run_backward = engine.gmr_engine_run_backward
HOOK = ctypes.CFUNCTYPE(ctypes.c_int)  # called on the engine thread: ctypes takes the GIL
cudart = ctypes.CDLL(os.environ["GMR_CUDART"])


def train_step(mode, count):
    return torch.autograd.backward(mode, 4 * MiB, count)  # @site:backward


def wait_in_backward():
    torch.autograd.backward(1, 0, 0)  # @site:waiter


def start_waiter():
    t = threading.Thread(target=wait_in_backward, name="waiter")
    t.start()
    while engine.gmr_engine_blocked() < 1:
        time.sleep(0.001)
    return t


def alloc_until_failure():
    made = 0
    for _ in range(1000):
        p = ctypes.c_void_p()
        if cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(4 * MiB)) != 0:  # @site:own_alloc
            break
        made += 1
    return made


def user_hook():
    return alloc_until_failure()  # @site:user_hook


def run_hook(fn):
    hook = HOOK(fn)  # kept alive while the engine calls it
    engine.gmr_engine_set_hook(hook)
    return train_step(3, 0)


def churn(stop):
    def busy(n):
        return sum(i * i for i in range(n))

    while not stop.is_set():
        ts = [threading.Thread(target=busy, args=(200,)) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()


def main(scenario):
    print("lender", threading.get_native_id(), flush=True)
    if scenario == "oom":
        print("made", train_step(0, 1000))  # @site:main
    elif scenario == "ambiguous":
        t = start_waiter()
        print("made", train_step(0, 1000))
        engine.gmr_engine_release()
        t.join()
    elif scenario == "not_torch":
        t = start_waiter()
        native = ctypes.CDLL(os.environ["GMR_NATIVE_LIB"])
        native.native_thread_alloc_until_failure.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
        print("made", native.native_thread_alloc_until_failure(os.environ["GMR_CUDART"].encode(), 4 * MiB, 1000))
        engine.gmr_engine_release()
        t.join()
    elif scenario == "hook_library":
        import gmr_zero
        print("made", run_hook(gmr_zero.grad_handling_hook))
    elif scenario == "hook_user":
        print("made", run_hook(user_hook))
    elif scenario == "python_thread":
        t = start_waiter()
        worker = threading.Thread(target=alloc_until_failure, name="allocator")
        worker.start()
        worker.join()
        engine.gmr_engine_release()
        t.join()
    elif scenario == "churn":
        stop = threading.Event()
        churners = [threading.Thread(target=churn, args=(stop,)) for _ in range(3)]
        for t in churners:
            t.start()
        print("made", train_step(2, 3000))
        stop.set()
        for t in churners:
            t.join()


main(sys.argv[1])  # @site:module
