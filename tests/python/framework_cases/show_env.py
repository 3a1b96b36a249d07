"""Prints what the program and a child see: PYTHONPATH, the hook's private
variable, sys.path, the sitecustomize module, and a child python's own view
(the child inherits LD_PRELOAD, so it is hooked too). The hook's own
presence goes to stderr: the compared output is stdout."""
import json
import os
import subprocess
import sys


def view():
    sc = sys.modules.get("sitecustomize")
    return {
        "PYTHONPATH": os.environ.get("PYTHONPATH"),
        "saved": os.environ.get("GPUMEMREC_PYHOOK_SAVED"),
        "sys.path": sys.path,
        "user_sitecustomize": getattr(sc, "USER_MARK", None),
        "c_getenv": _c_getenv("PYTHONPATH"),
    }


def _c_getenv(name):
    import ctypes
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p
    v = libc.getenv(name.encode())
    return v.decode() if v is not None else None


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(view()))
        sys.stderr.write("HOOKED=%d\n" % ("gpumemrec_pyhook" in sys.modules))
        sys.exit(0)
    sys.stderr.write("HOOKED=%d\n" % ("gpumemrec_pyhook" in sys.modules))
    print(json.dumps(view()))
    child = subprocess.run([sys.executable, os.path.abspath(__file__), "--child"], stdout=subprocess.PIPE,
                           universal_newlines=True, check=True)
    print(child.stdout.strip())
    env = subprocess.run(["env"], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    print(json.dumps(sorted(l for l in env.splitlines() if l.startswith(("PYTHONPATH=", "GPUMEMREC_PYHOOK")))))
