"""Installs a pinned npm package into a directory of the build tree at test
time (never committed; a second run reuses it), for the tests that run a
real consumer in Node (run_trace_engine.py, run_fleet_queries.py)."""
import os
import subprocess


def npm_install(prefix, package, name):
    """True when `name` (e.g. "@duckdb/node-api") is installed in prefix; else
    prints a SKIP line saying why (registry unreachable?) and returns False."""
    marker = os.path.join(prefix, "node_modules", *name.split("/"), "package.json")
    if os.path.exists(marker):
        return True
    os.makedirs(prefix, exist_ok=True)
    try:
        p = subprocess.run(["npm", "install", "--prefix", prefix, "--no-audit", "--no-fund", "--ignore-scripts",
                            "--no-save", package], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    except subprocess.TimeoutExpired:
        print("SKIP: npm install %s timed out (registry unreachable?)" % package)
        return False
    if p.returncode != 0 or not os.path.exists(marker):
        print("SKIP: npm could not install %s (registry unreachable?):\n%s" % (package, p.stdout.decode()[-2000:]))
        return False
    return True
