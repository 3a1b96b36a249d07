"""Stand-in for torch/nn/modules/container.py's Sequential (tests only):
children named "0", "1", ...; forward chains them."""
from .module import Module


class Sequential(Module):
    def __init__(self, *mods):
        super().__init__()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input
