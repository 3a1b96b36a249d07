#!/usr/bin/env python3
"""Checks that dependencies point one way (docs/design.md, "The layers"):

    shim/hooks -> shim/dump -> shim/record -> shim/base      (shim/lifecycle.cpp sees all)
    tools -> common, shim -> common; common includes neither shim nor tools;
    tools never include shim.

shim/dump/ is split into rooms by concern, each with the rooms it may use
(ROOM_USES below): the coordination at shim/dump/ itself sees every room;
write/ sees capture/, query/ and verdict/; place/ sees the same three
(the bundle-size figures it checks are the schema's, in common/); capture/
sees query/; status/ sees capture/ and query/; query/ and verdict/ see only
the layers below dump.

Reads every #include "..." and #include <...> of the project's own folders
(shim/, common/, tools/) in the source tree: the angle-bracket form is refused
(it would hide a back-edge from a reader grepping for quotes). Prints each
back-edge and exits 1 if there is any, so a layering mistake fails the test
suite.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
RANK = {"shim/base": 0, "shim/record": 1, "shim/dump": 2, "shim/hooks": 3}
# Rooms inside shim/dump: which other rooms each may include.
ROOM_USES = {
    "shim/dump/query": set(),
    "shim/dump/verdict": set(),
    "shim/dump/capture": {"shim/dump/query"},
    "shim/dump/write": {"shim/dump/capture", "shim/dump/query", "shim/dump/verdict"},
    "shim/dump/place": {"shim/dump/capture", "shim/dump/query", "shim/dump/verdict"},
    "shim/dump/status": {"shim/dump/capture", "shim/dump/query"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ANGLE_OWN = re.compile(r'^\s*#\s*include\s+<((?:shim|common|tools)/[^>]+)>', re.M)


def room(path):
    """The dump room of a path ("shim/dump/write"), "shim/dump" for the
    coordination files, None outside shim/dump."""
    for prefix in ROOM_USES:
        if path.startswith(prefix + "/"):
            return prefix
    return "shim/dump" if path.startswith("shim/dump/") else None


def room_allowed(src_path, dst_path):
    """Inside shim/dump: the coordination sees every room; a room sees itself
    and the rooms it lists; nothing in a room sees the coordination."""
    src, dst = room(src_path), room(dst_path)
    if src is None or dst is None or src == dst or src == "shim/dump":
        return True
    if dst == "shim/dump":
        return False
    return dst in ROOM_USES[src]


def layer(path):
    for prefix in RANK:
        if path.startswith(prefix + "/"):
            return prefix
    for top in ("common", "tools", "shim"):
        if path.startswith(top + "/"):
            return top
    return None


def allowed(src, dst):
    """True if a file in layer `src` may include a file in layer `dst`."""
    if dst is None or src == dst:
        return True
    if src == "common":
        return False if dst != "common" else True
    if dst == "common":
        return True
    if src == "tools":
        return False  # tools see common only
    if src == "shim":  # shim/lifecycle.cpp and shim-level files
        return dst in RANK
    if src in RANK and dst in RANK:
        return RANK[dst] < RANK[src]
    return False


def main():
    errors = []
    checked = 0
    for top in ("shim", "common", "tools"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for name in names:
                if not name.endswith((".h", ".cpp", ".c", ".S")):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, ROOT).replace(os.sep, "/")
                src = layer(rel)
                with open(full, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for inc in ANGLE_OWN.findall(text):
                    errors.append("%s: #include <%s>: write the project's own headers with quotes" % (rel, inc))
                for inc in INCLUDE.findall(text):
                    checked += 1
                    if "/" not in inc:
                        errors.append("%s: include \"%s\" without its folder (write \"common/...\", \"shim/...\")"
                                      % (rel, inc))
                        continue
                    if not allowed(src, layer(inc)):
                        errors.append("%s (%s) includes %s (%s): a back-edge" % (rel, src, inc, layer(inc)))
                    elif not room_allowed(rel, inc):
                        errors.append("%s (%s) includes %s (%s): not a room it may use"
                                      % (rel, room(rel), inc, room(inc)))
    for e in errors:
        print(e)
    print("check_layers: %d includes checked, %d problems" % (checked, len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
