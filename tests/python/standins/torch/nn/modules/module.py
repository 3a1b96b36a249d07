"""Stand-in for torch/nn/modules/module.py (tests only), after pytorch/pytorch
@ 1a5f2e5079238e645bbe42ba6ad1f8b27c148ac0: __init__ sets _parameters,
_buffers, _non_persistent_buffers_set and _modules with
super().__setattr__; __setattr__ files a Parameter in _parameters and a
Module in _modules; __getattr__ looks in the three dicts; parameters() and
buffers() go through _named_members (a memo set: a tensor shared by two
modules is yielded once).
"""
from ..parameter import Parameter


class Module:
    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", {})

    def __setattr__(self, name, value):
        if isinstance(value, Parameter):
            self.__dict__["_parameters"][name] = value
        elif isinstance(value, Module):
            self.__dict__["_modules"][name] = value
        elif name in self.__dict__.get("_buffers", {}):
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for where in ("_parameters", "_buffers", "_modules"):
            if name in d.get(where, {}):
                return d[where][name]
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def register_buffer(self, name, tensor, persistent=True):
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        self._parameters[name] = param

    def _named_members(self, get_members, prefix="", recurse=True):
        memo = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for k, v in get_members(mod):
                if v is None or id(v) in memo:
                    continue
                memo.add(id(v))
                yield (mod_prefix + ("." if mod_prefix else "") + k, v)

    def named_parameters(self, prefix="", recurse=True):
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_modules(self, memo=None, prefix=""):
        memo = set() if memo is None else memo
        if self in memo:
            return
        memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + ("." if prefix else "") + name)

    def children(self):
        return iter(self._modules.values())

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            p.grad = None

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)
