#!/usr/bin/env python3
"""Checks that every bundle key and file name is spelled once, in the schema
(common/bundle_keys.h, common/bundle_schema.h), and documented.

- common/bundle_keys.h: one X(kIdentifier, "name") line per key; no name or
  identifier twice.
- The code that writes or reads bundle files (shim/dump/ and common/'s
  bundle reader and model) holds no string literal that is a key or a file
  name ("seq", "events.json"), nor one that spells a key inside JSON text
  ("\\"seq\\":"): they use key::kSeq and file::kEvents.
- docs/bundle-format.md names every key (`name` or "name") and every file.

Comments are skipped. The tools' own JSON output (report --json, ...) and the
PyTorch snapshot's keys (common/memviz_snapshot.cpp) are other formats and
are not checked. Prints each problem and exits 1 if there is any.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
KEYS_H = "common/bundle_keys.h"
SCHEMA_H = "common/bundle_schema.h"
DOC = "docs/bundle-format.md"
# The writers and readers of bundle files.
CHECKED = ["shim/dump"]
CHECKED_FILES = re.compile(r"^common/(bundle_read[^/]*|bundle_model|framework_digest|card_accounting_json)\.(h|cpp)$")

KEY_LINE = re.compile(r'X\((k\w+), "([^"]+)"\)')
FILE_LINE = re.compile(r'inline constexpr char (k\w+)\[\] = "([^"]+\.(?:json|txt|pickle|pb\.gz))";')
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/', re.S)


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def strip_comments(text):
    """Comments out, string literals kept (a '//' inside a literal stays)."""
    out, i = [], 0
    for m in re.finditer(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|//[^\n]*|/\*.*?\*/', text, re.S):
        out.append(text[i:m.start()])
        out.append(m.group(0) if m.group(0)[0] in "\"'" else "\n" * m.group(0).count("\n"))
        i = m.end()
    out.append(text[i:])
    return "".join(out)


def schema_names(errors):
    keys = KEY_LINE.findall(strip_comments(read(KEYS_H)))
    if not keys:
        errors.append("%s: no X(kIdentifier, \"name\") lines found" % KEYS_H)
    seen_ids, seen_names = {}, {}
    for ident, name in keys:
        if ident in seen_ids:
            errors.append("%s: identifier %s twice" % (KEYS_H, ident))
        if name in seen_names:
            errors.append("%s: key \"%s\" twice (%s and %s): one line per key" % (KEYS_H, name, seen_names[name], ident))
        seen_ids[ident], seen_names[name] = name, ident
    files = dict((name, ident) for ident, name in FILE_LINE.findall(strip_comments(read(SCHEMA_H))))
    if not files:
        errors.append("%s: no file names found" % SCHEMA_H)
    return seen_names, files


def checked_sources():
    for top in CHECKED:
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for name in sorted(names):
                if name.endswith((".h", ".cpp")):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT).replace(os.sep, "/")
    for name in sorted(os.listdir(os.path.join(ROOT, "common"))):
        if CHECKED_FILES.match("common/" + name):
            yield "common/" + name


def check_literals(keys, files, errors):
    count = 0
    for rel in checked_sources():
        text = strip_comments(read(rel))
        for m in LITERAL.finditer(text):
            count += 1
            lit = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            if lit in keys:
                errors.append('%s:%d: "%s" is a bundle key: write key::%s (common/bundle_keys.h)'
                              % (rel, line, lit, keys[lit]))
            elif lit in files:
                errors.append('%s:%d: "%s" is a bundle file: write file::%s (common/bundle_schema.h)'
                              % (rel, line, lit, files[lit]))
            else:
                for k in re.findall(r'\\"(\w+)\\":', lit):
                    if k in keys:
                        errors.append('%s:%d: the key "%s" spelled inside a literal: write key::%s'
                                      % (rel, line, k, keys[k]))
    return count


def check_documented(keys, files, errors):
    doc = read(DOC)
    for name in list(keys) + list(files):
        if "`%s`" % name not in doc and '"%s"' % name not in doc:
            errors.append("%s: \"%s\" is in the schema but not documented" % (DOC, name))


def main():
    errors = []
    keys, files = schema_names(errors)
    count = check_literals(keys, files, errors)
    check_documented(keys, files, errors)
    for e in errors:
        print(e)
    print("check_schema_keys: %d keys, %d files, %d literals checked, %d problems"
          % (len(keys), len(files), count, len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
