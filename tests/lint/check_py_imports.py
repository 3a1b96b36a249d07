#!/usr/bin/env python3
"""Checks that the modules of the project's Python packages import each
other one way (no cycle), whether the import is at the top of the file or
inside a function: the Python start-up hook (shim/python/gpumemrec_pyhook)
and the wheel's package (python/gpumemrec).

  check_py_imports.py ROOT

Reads every `import` and `from ... import` with the ast module (relative
ones resolved against the package; `from . import a, b` names the modules
a and b). Prints each cycle and exits 1 if there is any.
"""
import ast
import os
import sys

PACKAGES = ("shim/python/gpumemrec_pyhook", "python/gpumemrec")


def imports_of(path, package, modules):
    """The package's own modules that the file at `path` imports."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):  # import gpumemrec.bundle
            names = [a.name[len(package) + 1:] for a in node.names if a.name.startswith(package + ".")]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 0:  # from gpumemrec[.x] import ...: as if relative
                if module != package and not module.startswith(package + "."):
                    continue
                module = module[len(package) + 1:]
            # from .x import y names x; from . import a, b names a and b
            names = [module] if module else [a.name for a in node.names]
        else:
            continue
        out |= {n.split(".")[0] for n in names} & modules
    return out


def cycles(graph):
    """Every cycle, each once, as a list of modules starting at its least."""
    found = set()

    def visit(node, path):
        for nxt in sorted(graph[node]):
            if nxt in path:
                cyc = path[path.index(nxt):]
                i = cyc.index(min(cyc))
                found.add(tuple(cyc[i:] + cyc[:i]))
            else:
                visit(nxt, path + [nxt])

    for start in sorted(graph):
        visit(start, [start])
    return sorted(found)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    problems = 0
    for rel in PACKAGES:
        folder = os.path.join(root, rel)
        package = os.path.basename(rel)
        files = {n[:-3]: os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".py")}
        modules = set(files) - {"__init__"}
        graph = {m: imports_of(p, package, modules) - {m} for m, p in files.items() if m in modules}
        for cyc in cycles(graph):
            problems += 1
            print("%s: %s import each other (%s)" % (rel, " and ".join(cyc), " -> ".join(cyc + (cyc[0],))))
        print("check_py_imports: %s: %d modules, %d imports between them" %
              (rel, len(graph), sum(len(v) for v in graph.values())))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
