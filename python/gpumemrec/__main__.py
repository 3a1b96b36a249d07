"""`python -m gpumemrec ...` and the `gpumemrec` console script.

Both hand over to the native command (os.execv: same process, so its exit
status and signal forwarding are the command's own). `python -m gpumemrec
run` also accepts a Python script or `-m module` / `-c code` as the program,
and runs it with this interpreter:

  python -m gpumemrec run train.py --lr 0.1
  python -m gpumemrec run --limit 24GiB -m torch.distributed.run ...
  python -m gpumemrec run -- python train.py     (the same as the command)
"""
import os
import sys

from gpumemrec._native import CommandError, command

# `gpumemrec run` options that take a value (tools/cmd_run.cpp, add_run);
# tests/wheel/wheel_test.py checks this list against `gpumemrec run --help`.
RUN_VALUE_OPTIONS = {"--dir", "--ring-events", "--stack-depth", "--episode-ms", "--max-dumps", "--max-total-mb",
                     "--log-level", "--limit", "--fail-after", "--dump-signal", "--library", "--simulate"}


def python_program(words):
    """[sys.executable] + words when words name a Python program (a .py
    file, -m module, -c code), else words unchanged."""
    if words and (words[0].endswith(".py") or words[0] in ("-m", "-c")):
        return [sys.executable] + words
    return words


def rewrite_run(args):
    """The arguments of `gpumemrec run` with the program made explicit:
    options first, then '--' and the program."""
    options, i = [], 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return options + ["--"] + python_program(args[i + 1:])
        if a in ("-m", "-c") or not a.startswith("-"):
            return options + ["--"] + python_program(args[i:])
        options.append(a)
        if a in RUN_VALUE_OPTIONS and i + 1 < len(args):
            options.append(args[i + 1])
            i += 1
        i += 1
    return options  # no program: the command says so


def exec_command(argv):
    try:
        exe = command()
    except CommandError as e:
        sys.stderr.write("gpumemrec: error: %s\n" % e)
        return 1
    if argv and argv[0] == "export" and not os.environ.get("GPUMEMREC_PYTHON"):
        # --table-format parquet writes with pyarrow: this environment's (tools/parquet_writer.h)
        os.environ["GPUMEMREC_PYTHON"] = sys.executable
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [exe] + argv)
    return 1  # not reached


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        argv = ["run"] + rewrite_run(argv[1:])
    return exec_command(argv)


def console_main():
    """The `gpumemrec` console script: the native command, untouched."""
    return exec_command(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
