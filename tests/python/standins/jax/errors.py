"""Stand-in for jax.errors: JaxRuntimeError is jaxlib's XlaRuntimeError
(jaxlib/xla_extension: a RuntimeError subclass; an allocation failure's
message starts with "RESOURCE_EXHAUSTED:")."""
from ._src.client import XlaRuntimeError

JaxRuntimeError = XlaRuntimeError
