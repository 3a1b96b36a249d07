"""Stand-in for jax.tree_util.tree_leaves (jax/_src/tree_util.py): the
leaves of a pytree; dicts (by sorted key), lists, tuples and namedtuples
are nodes, None is an empty node, a registered dataclass (flax.struct) is a
node of its pytree fields."""


def tree_leaves(tree, is_leaf=None):
    if tree is None:
        return []
    if isinstance(tree, dict):
        return [x for k in sorted(tree) for x in tree_leaves(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [x for v in tree for x in tree_leaves(v)]
    fields = getattr(type(tree), "__pytree_fields__", None)
    if fields is not None:
        return [x for f in fields for x in tree_leaves(getattr(tree, f))]
    return [tree]
