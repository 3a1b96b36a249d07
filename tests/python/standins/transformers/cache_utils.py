"""Stand-in for transformers' src/transformers/cache_utils.py (tests only),
after huggingface/transformers @ 67dd5524d384fdf6b20f6123e7a9d74e6ed96345:
CacheLayerMixin.__init__ sets keys = values = None and is_initialized =
False; StaticLayer(max_cache_len).update(key_states, value_states,
cache_kwargs) calls lazy_initialization(key_states, value_states) once,
which allocates keys and values of [max_batch_size, num_heads,
max_cache_len, head_dim] (zeros, the states' dtype and device) and then
writes in place; Cache(layers=...) keeps them in `layers`; StaticCache
builds one StaticLayer per hidden layer."""
import torch


class CacheLayerMixin:
    is_compileable = False

    def __init__(self):
        self.keys, self.values = None, None
        self.is_initialized = False


class StaticLayer(CacheLayerMixin):
    is_compileable = True
    is_sliding = False

    def __init__(self, max_cache_len):
        super().__init__()
        self.max_cache_len = max_cache_len

    def lazy_initialization(self, key_states, value_states):
        self.dtype, self.device = key_states.dtype, key_states.device
        self.max_batch_size, self.num_heads = key_states.shape[:2]
        self.k_head_dim, self.v_head_dim = key_states.shape[-1], value_states.shape[-1]
        self.keys = torch.zeros((self.max_batch_size, self.num_heads, self.max_cache_len, self.k_head_dim),
                                dtype=self.dtype, device=self.device)
        self.values = torch.zeros((self.max_batch_size, self.num_heads, self.max_cache_len, self.v_head_dim),
                                  dtype=self.dtype, device=self.device)
        self.is_initialized = True

    def update(self, key_states, value_states, cache_kwargs=None):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        return self.keys, self.values  # index_copy_ in place: no new memory


class Cache:
    def __init__(self, layers=None, layer_class_to_replicate=None, offloading=False, offload_only_non_sliding=True):
        self.layers = layers if layers is not None else []
        self.layer_class_to_replicate = layer_class_to_replicate

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        return self.layers[layer_idx].update(key_states, value_states, cache_kwargs)


class StaticCache(Cache):
    def __init__(self, config=None, max_cache_len=None, num_hidden_layers=None, **kwargs):
        n = num_hidden_layers if num_hidden_layers is not None else config.num_hidden_layers
        super().__init__(layers=[StaticLayer(max_cache_len) for _ in range(n)])
