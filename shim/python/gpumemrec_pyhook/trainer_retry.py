"""Trainers that catch PyTorch's out-of-memory error and retry with a
smaller batch: the verdict of such an error is `recovered` when the
trainer's handler caught it (docs/python-hook.md, "Trainers that retry").

Sources read (the frameworks venv: accelerate 1.15.0, lightning 2.6.6,
transformers 5.24.0):
- accelerate/utils/memory.py, find_executable_batch_size: its inner function
  `decorator` calls the user's function in `while True: try: ... except
  Exception as e: if should_reduce_batch_size(e): clear_device_cache(
  garbage_collection=True); batch_size = reduce_batch_size_fn() else: raise`.
  should_reduce_batch_size: a RuntimeError with one argument that contains
  " out of memory." (PyTorch's "CUDA out of memory. Tried to allocate ...").
  clear_device_cache runs gc.collect() first. The default
  reduce_batch_size_fn is int(batch_size * 0.9); at 0 the loop raises
  RuntimeError("No executable batch size found, reached zero.").
- transformers/trainer_utils.py, find_executable_batch_size: with
  TrainingArguments(auto_find_batch_size=True) it is accelerate's, and
  Trainer.train wraps _inner_training_loop in it (transformers/trainer.py).
- lightning/pytorch/tuner/batch_size_scaling.py, _run_power_scaling and
  _run_binsearch_scaling (the BatchSizeFinder callback,
  Tuner.scale_batch_size): `except RuntimeError as exception: if
  is_oom_error(exception): garbage_collection_cuda(); ...` (power: the batch
  halved, int(new_size * 0.5); binsearch: the midpoint, at least 1), else
  raise. lightning/pytorch/utilities/memory.py, garbage_collection_cuda:
  gc.collect(), then torch.cuda.empty_cache(). pytorch_lightning, the
  package's other name, holds the same files.

How the hook tells (torch_hook.py calls find, then await_catch):
1. In PyTorch's out-of-memory observer: the Python stack of the thread the
   error will reach (the observer's caller; on the autograd engine's device
   thread, which runs no Python, the one thread waiting in
   torch/autograd/graph.py _engine_run_backward) is searched, innermost
   first, for a handler's frame.
2. The report names it (framework.json retry_handler): the recorder keeps
   the episode open and held (its bound renewed: twice
   GPUMEMREC_ROLES_BUDGET_MS plus GPUMEMREC_EPISODE_MS).
3. The handler's except clause calls its cleanup, whose gc.collect() runs
   the gc callbacks: ours sees the cleanup as its caller, the handler's
   frame as the cleanup's caller and an out-of-memory RuntimeError being
   handled. The handler caught the error and retries: recovered.
When the catch does not come (code between swallowed the error or replaced
it, as transformers does with an evaluation's out-of-memory, which
accelerate then does not retry; or the handler gives up at batch size 0),
the hold's end decides: fatal.
"""
import gc
import os
import sys
from collections import namedtuple

# A handler: its file (path suffix) and function, its cleanup's, the name
# said in the bundle, and a test of the frame for "gives up instead".
Handler = namedtuple("Handler", "file function cleanup_file cleanup name gives_up")
Found = namedtuple("Found", "handler frame")


def _accelerate_gives_up(frame):
    """The default reduce_batch_size_fn leads to 0: the loop raises instead."""
    loc = frame.f_locals
    size, reduce = loc.get("batch_size"), loc.get("reduce_batch_size_fn")
    default = getattr(reduce, "__qualname__", "").endswith("find_executable_batch_size.<locals>.reduce_batch_size_fn")
    return default and isinstance(size, int) and int(size * 0.9) == 0


def _power_gives_up(frame):
    size = frame.f_locals.get("new_size")
    return isinstance(size, int) and int(size * 0.5) == 0


def _never(frame):
    return False


def _lightning(package):
    tuner = package + "/tuner/batch_size_scaling.py"
    memory = package + "/utilities/memory.py"
    return (Handler(tuner, "_run_power_scaling", memory, "garbage_collection_cuda",
                    "Lightning's BatchSizeFinder (power)", _power_gives_up),
            Handler(tuner, "_run_binsearch_scaling", memory, "garbage_collection_cuda",
                    "Lightning's BatchSizeFinder (binsearch)", _never))


HANDLERS = (
    Handler("accelerate/utils/memory.py", "decorator", "accelerate/utils/memory.py", "clear_device_cache",
            "accelerate's find_executable_batch_size", _accelerate_gives_up),
) + _lightning("lightning/pytorch") + _lightning("pytorch_lightning")


def _in(code, file, function):
    return code.co_name == function and code.co_filename.replace(os.sep, "/").endswith("/" + file)


def _waiting_in_backward(frame):
    return _in(frame.f_code, "torch/autograd/graph.py", "_engine_run_backward")


def receiving_frame(caller):
    """The innermost Python frame of the thread the error will reach."""
    if caller is not None:
        return caller
    waiting = [f for f in sys._current_frames().values() if _waiting_in_backward(f)]
    return waiting[0] if len(waiting) == 1 else None


def find(caller):
    """The innermost handler on the stack the error will unwind, or None."""
    frame = receiving_frame(caller)
    while frame is not None:
        for h in HANDLERS:
            if _in(frame.f_code, h.file, h.function):
                return Found(h, frame)
        frame = frame.f_back
    return None


# (device, handler, id of its frame, its code): no frame is kept alive.
_awaited = [None]
_installed = [False]


def await_catch(device, found):
    _awaited[0] = (int(device), found.handler, id(found.frame), found.frame.f_code)
    if not _installed[0]:
        gc.callbacks.append(_on_gc)
        _installed[0] = True


def _on_gc(phase, info):
    if _awaited[0] is not None and phase == "start":
        from . import bridge

        bridge.guarded(_check_catch, sys._getframe().f_back)


def _is_oom(exc):
    return isinstance(exc, RuntimeError) and bool(exc.args) and "out of memory" in str(exc.args[0])


def _check_catch(cleanup):
    """In a collection's start: is it the awaited handler's cleanup, called
    from its except clause with the out-of-memory error?"""
    device, handler, frame_id, code = _awaited[0]
    if cleanup is None or not _in(cleanup.f_code, handler.cleanup_file, handler.cleanup):
        return
    frame = cleanup.f_back
    if frame is None or id(frame) != frame_id or frame.f_code is not code or not _is_oom(sys.exc_info()[1]):
        return
    _awaited[0] = None
    if handler.gives_up(frame):
        return  # the hold's end decides: fatal
    from . import bridge

    bridge.recovered(device, handler.name)
