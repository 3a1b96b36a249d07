"""Where a test program lets its exception go uncaught: `main` runs fn in
the main thread (sys.excepthook sees it; exit status 1), `thread` in a
thread (threading.excepthook sees it), then prints "thread ended" and exits 3."""
import sys
import threading


def run(fn, mode):
    if mode == "thread":
        t = threading.Thread(target=fn)
        t.start()
        t.join()
        print("thread ended")
        sys.exit(3)
    fn()
