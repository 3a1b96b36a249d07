#!/usr/bin/env python3
"""Open a `gpumemrec html` report in headless Chromium and check it.

  check_html.py REPORT.html [--chromium /usr/bin/chromium] [--png OUT.png]

1. --dump-dom with console logging on stderr: the page must have written
   "gmr-render-ok" into #gmr-status (its JS wraps rendering in try/catch and
   writes "gmr-render-error: ..." otherwise) and Chromium must log no
   uncaught exception / console error from the page.
2. --screenshot at 1280x900: the PNG (decoded here with zlib) must not be
   blank: enough distinct colors and non-white pixels.
Exits 0 ok, 1 failure, 77 when Chromium is not installed (ctest SKIP).
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

SKIP = 77
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars"]


def decode_png(data):
    """Returns (width, height, rows) with rows as lists of RGB(A) byte strings."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, [], None
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if typ == b"IHDR":
            w, h, depth, ctype, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError("unsupported PNG (depth %d, color type %d, interlace %d)" % (depth, ctype, interlace))
            bpp = 3 if ctype == 2 else 4
        elif typ == b"IDAT":
            idat.append(body)
        elif typ == b"IEND":
            break
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 0xFF
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 0xFF
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def png_stats(path):
    with open(path, "rb") as f:
        w, h, bpp, rows = decode_png(f.read())
    colors, non_white = set(), 0
    for y in range(0, h, 2):
        row = rows[y]
        for x in range(0, w, 2):
            px = row[x * bpp:x * bpp + 3]
            colors.add(px)
            if px != b"\xff\xff\xff":
                non_white += 1
    sampled = ((h + 1) // 2) * ((w + 1) // 2)
    return w, h, len(colors), non_white / float(sampled)


def run(cmd, timeout):
    t = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return p, time.time() - t


def render(html, chromium, fragment="", timeout=120):
    """Loads html#fragment in headless Chromium with --dump-dom and returns
    (status text, {attribute: value} of #gmr-status, the parsed #gmr-test JSON
    or None, Chromium's wall time in seconds, the DOM as text). The page measures its own
    render time (data-render-ms: script start to laid out; data-load-ms: from
    navigation start) with performance.now()."""
    import json
    tmp = tempfile.mkdtemp(prefix="gmr-chromium-")
    try:
        url = "file://" + os.path.abspath(html) + fragment
        p, secs = run([chromium] + FLAGS + ["--user-data-dir=" + os.path.join(tmp, "u"), "--dump-dom", url], timeout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    dom = p.stdout.decode("utf-8", "replace")
    m = re.search(r'<div id="gmr-status"([^>]*)>([^<]*)<', dom)
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1))) if m else {}
    t = re.search(r'<div id="gmr-test"[^>]*>([^<]*)<', dom)
    test = None
    if t and t.group(1).strip():
        test = json.loads(t.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"'))
    return (m.group(2) if m else None), attrs, test, secs, dom


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("html")
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--png", help="keep the screenshot here")
    ap.add_argument("--timeout", type=int, default=120)
    args = ap.parse_args()
    if not (os.path.isfile(args.chromium) and os.access(args.chromium, os.X_OK)):
        print("check_html: SKIP: %s not found" % args.chromium)
        return SKIP
    url = "file://" + os.path.abspath(args.html)
    tmp = tempfile.mkdtemp(prefix="gmr-chromium-")
    try:
        p, secs = run([args.chromium] + FLAGS + ["--user-data-dir=" + os.path.join(tmp, "u1"), "--enable-logging=stderr",
                                                 "--v=0", "--virtual-time-budget=5000", "--dump-dom", url], args.timeout)
        dom = p.stdout.decode("utf-8", "replace")
        log = p.stderr.decode("utf-8", "replace")
        m = re.search(r'id="gmr-status"[^>]*>([^<]*)<', dom)
        status = m.group(1) if m else None
        console = [l for l in log.splitlines() if "CONSOLE" in l or "Uncaught" in l]
        errors = [l for l in console if re.search(r"Uncaught|Error|error", l)]
        print("check_html: dump-dom in %.2f s, status %r, %d console line(s)" % (secs, status, len(console)))
        for l in console[:10]:
            print("  " + l)
        if status != "gmr-render-ok":
            print("check_html: FAIL: page did not render (status %r, chromium rc %d)" % (status, p.returncode))
            print(log[-2000:])
            return 1
        if errors:
            print("check_html: FAIL: console errors")
            return 1
        png = args.png or os.path.join(tmp, "shot.png")
        p, secs = run([args.chromium] + FLAGS + ["--user-data-dir=" + os.path.join(tmp, "u2"), "--window-size=1280,900",
                                                 "--virtual-time-budget=5000", "--screenshot=" + png, url], args.timeout)
        if not os.path.exists(png):
            print("check_html: FAIL: no screenshot (chromium rc %d)\n%s" % (p.returncode, p.stderr.decode()[-2000:]))
            return 1
        w, h, ncolors, frac = png_stats(png)
        print("check_html: screenshot %dx%d in %.2f s: %d distinct colors, %.1f%% non-white pixels"
              % (w, h, secs, ncolors, 100 * frac))
        if ncolors < 8 or frac < 0.05:
            print("check_html: FAIL: the screenshot looks blank")
            return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("check_html: ok: %s" % args.html)
    return 0


if __name__ == "__main__":
    sys.exit(main())
