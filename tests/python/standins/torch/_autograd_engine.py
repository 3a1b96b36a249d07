"""Stand-in for torch._C._ImperativeEngine (tests only).

pytorch/pytorch torch/csrc/autograd/python_engine.cpp, THPEngine_run_backward
(tensors, grad_tensors, keep_graph, create_graph, inputs, allow_unreachable,
accumulate_grad): releases the GIL and runs Engine::execute, which hands the
graph to a device thread and waits. engine.cpp's order: dependencies counted
from the roots (compute_dependencies), then ready nodes by descending
sequence_nr (ReadyQueue, CompareNodeTaskTime); each node's gradients go to
its next edges' InputBuffers (the first one kept, later ones added in place);
AccumulateGrad steals a gradient for a .grad that is None, else adds in
place (torch/csrc/autograd/functions/accumulate_grad.h); a node's saved
variables are released after it ran unless keep_graph.

The native part is gmr_autograd_engine.c (path in GMR_AUTOGRAD_ENGINE): its
worker thread walks this module's job list, one gradient per job, and
reaches the allocator through the callbacks below (each takes the GIL).
An out-of-memory there runs the observers on the worker (with the GIL) and
raises OutOfMemoryError here, on the calling thread, as
Engine::execute's future rethrows the device thread's exception.
Left out: set_per_process_memory_fraction does not limit the segments the
engine's thread makes (the tests that use a fraction allocate on the
Python thread); during the worker's cudaMalloc no callback is active, so
that thread has no Python frame (nor thread state) at that moment.
"""
import ctypes
import heapq
import os
import threading

from . import _autograd_nodes as nodes

_TAKE = ctypes.CFUNCTYPE(ctypes.c_longlong, ctypes.c_int)
_RELEASE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_size_t)
_PLACE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)
_OOM = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t)


def _order(roots):
    """engine.cpp: dependencies, then ready nodes by descending sequence_nr."""
    deps, seen, stack = {}, set(roots), list(roots)
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    ready = [(-n._sequence_nr, id(n), n) for n in roots if deps.get(n, 0) == 0]
    order = []
    while ready:
        node = heapq.heappop(ready)[2]
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None:
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    heapq.heappush(ready, (-nxt._sequence_nr, id(nxt), nxt))
    return [n for n in order if not isinstance(n, nodes.AccumulateGrad)]


class _GraphTask:
    """One backward: the jobs (node, edge) and the InputBuffers."""

    def __init__(self, tensors, grad_tensors, keep_graph):
        roots = [t.grad_fn for t in tensors if t.grad_fn is not None]
        if not roots:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        self.buffers = {t.grad_fn: g for t, g in zip(tensors, grad_tensors) if t.grad_fn is not None}
        self.jobs = []
        for node in _order(roots):
            self.jobs += [(node, i) for i, (nxt, _) in enumerate(node.next_functions) if nxt is not None]
            self.jobs.append((node, None))  # the node is done
        self.keep_graph = keep_graph
        self.error = None

    def take(self, i):
        node, edge = self.jobs[i]
        if edge is None:
            self.buffers.pop(node, None)
            if not self.keep_graph:
                node.release_variables()
            return 0
        nbytes = node._new_bytes[edge]
        if nbytes == 0:  # a view of the node's incoming gradient
            self._deliver(node, edge, self.buffers.get(node))
            return 0
        from . import _C
        block, need = _C._allocator().take_cached(nbytes)
        if block is not None:
            self._deliver(node, edge, self._tensor(node, edge, block))
        return need

    def place(self, i, ptr, size):
        from . import _C
        node, edge = self.jobs[i]
        block = _C._allocator().place(ptr, size, node._new_bytes[edge])
        self._deliver(node, edge, self._tensor(node, edge, block))
        return 0

    def _tensor(self, node, edge, block):
        from ._tensor import _on_block
        shape, dtype, dev = node._shapes[edge]
        return _on_block(block, shape, dtype, dev)

    def _deliver(self, node, edge, grad):
        nxt = node.next_functions[edge][0]
        if isinstance(nxt, nodes.AccumulateGrad):
            if nxt.variable.grad is None and grad is not None:
                nxt.variable.grad = grad.view(*nxt.variable.shape)
        elif nxt not in self.buffers:
            self.buffers[nxt] = grad


class _ImperativeEngine:
    """THPEngine: run_backward is a C method (gmr_engine_method in the
    native part, as python_engine.cpp's THPEngine_run_backward is), so the
    waiting thread has no Python frame of the engine's own during the wait.
    It calls _prepare before releasing the GIL and _finish after."""

    @property
    def run_backward(self):
        method = self.__dict__.get("_method")
        if method is None:
            make = ctypes.PyDLL(os.environ["GMR_AUTOGRAD_ENGINE"]).gmr_engine_method
            make.restype = ctypes.py_object
            make.argtypes = [ctypes.py_object]
            method = self.__dict__["_method"] = make(self)
            self.__dict__["_tasks"] = threading.local()
        return method

    def _prepare(self, tensors, grad_tensors, keep_graph, create_graph, inputs=(), allow_unreachable=True,
                 accumulate_grad=True):
        task = _GraphTask(tensors, grad_tensors, keep_graph)
        task.callbacks = [_TAKE(_guard(task, task.take, -1)), _RELEASE(_guard(task, _release, 0)),
                          _PLACE(_guard(task, task.place, -1)), _OOM(_guard(task, _oom, None))]
        task.failed = ctypes.c_int(-1)
        self._tasks.current = task  # one graph task per calling thread
        return ((os.environ["GMR_CUDART"].encode(), len(task.jobs)) +
                tuple(ctypes.cast(cb, ctypes.c_void_p).value for cb in task.callbacks) +
                (ctypes.addressof(task.failed),))

    def _finish(self, rc):
        from . import _C

        task, self._tasks.current = self._tasks.current, None
        task.buffers.clear()  # the graph task goes: its InputBuffers with it
        if task.error is not None:
            raise task.error
        if rc == 1:
            raise _C.OutOfMemoryError("CUDA out of memory (autograd engine, job %d)." % task.failed.value)
        if rc != 0:
            raise RuntimeError("autograd engine stand-in failed (%d)" % rc)
        return ()


def _release(i, level, size):
    from . import _C
    return 1 if _C._allocator().release_for(level, size) else 0


def _oom(i, size, free, total):
    from . import _C
    _C._allocator().engine_oom(size, free, total)


def _guard(task, fn, on_error):
    """A callback's exception is kept and raised on the calling thread (as
    the device thread's exception is by the graph task's future)."""
    def call(*args):
        try:
            return fn(*args)
        except BaseException as exc:  # noqa: B902
            task.error = task.error or exc
            return on_error
    return call
