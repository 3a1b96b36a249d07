"""Stand-in autograd graph nodes (tests only): what torch's C++ nodes show
to Python (torch/csrc/autograd/generated/python_functions.cpp: `next_functions`
as ((node, input_nr), ...), `name()`, `_saved_<name>` properties that unpack a
SavedVariable; `AccumulateGrad.variable`), after
torch/csrc/autograd/function.h (Node, sequence_nr increasing per thread) and
tools/autograd/derivatives.yaml for the gradient each edge needs:
  addmm(self=bias, mat1=input, mat2=weight.t()): a new bias-shaped gradient
    (sum_to), a new input gradient, a new mat2 gradient -> TBackward0 (a
    view) -> AccumulateGrad(weight);
  relu: threshold_backward, a new tensor; sum: expand, a view.
Each node lists per edge the bytes the engine must allocate (0 = a view).
Reading a `_saved_*` property counts in `unpacks` (the tests check that the
recorder never does: an unpack hook may recompute or copy to the GPU).
"""
import itertools

_sequence = itertools.count()
unpacks = [0]


def _edge(t):
    if t is None or not t.requires_grad:
        return None
    return t.grad_fn if t.grad_fn is not None else _accumulator(t)


def _accumulator(t):
    acc = t.__dict__.get("_grad_accumulator")
    if acc is None:
        acc = AccumulateGrad(t)
        t.__dict__["_grad_accumulator"] = acc
    return acc


class Node:
    def __init__(self, inputs, new_bytes, saved=None):
        self._sequence_nr = next(_sequence)
        self._next = tuple((_edge(t), 0) for t in inputs)
        self._shapes = tuple((t.shape, t.dtype, t.device) if t is not None else None for t in inputs)
        self._new_bytes = tuple(new_bytes)
        self._saved = dict(saved or {})

    next_functions = property(lambda self: self._next)

    def name(self):
        return type(self).__name__

    def release_variables(self):
        self._saved = None

    def __getattr__(self, name):
        if name.startswith("_saved_"):
            saved = self.__dict__.get("_saved")
            if saved is None:
                raise RuntimeError("Trying to backward through the graph a second time (or directly access "
                                   "saved tensors after they have already been freed).")
            unpacks[0] += 1
            return saved[name[len("_saved_"):]]
        raise AttributeError(name)


class AccumulateGrad(Node):
    def __init__(self, variable):
        super().__init__((), ())
        self.variable = variable


class AddmmBackward0(Node):
    def __init__(self, bias, mat1, mat2):
        super().__init__((bias, mat1, mat2), (bias.nbytes if bias is not None else 0, mat1.nbytes, mat2.nbytes),
                         {"mat1": mat1, "mat2": mat2})


class TBackward0(Node):
    def __init__(self, t):
        super().__init__((t,), (0,))


class ReluBackward0(Node):
    def __init__(self, t, result):
        super().__init__((t,), (t.nbytes,), {"result": result})


class SumBackward0(Node):
    def __init__(self, t):
        super().__init__((t,), (0,))
