"""The fields docs/bundle-format.md documents, read from the document itself,
so a field that is documented but not written (or renamed on one side only)
fails every e2e bundle check. Standard library only.

- events.json: every key of the table under "### events.json", except the
  keys of its "#### Keys left out" table (written only when they do not hold
  the value a reader assumes); and no event carries a key documented in
  neither;
- manifest.json, metadata.json, environment.json: every top-level key of the
  JSON example under their "### <file>" heading.
"""
import json
import os
import re

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "bundle-format.md")

# Documented keys the writer does not produce yet, with the reason; listed so
# the gap is visible (printed once) instead of silently skipped.
KNOWN_MISSING = {}  # documented fields the shim does not write yet (none)

_cache = {}


def _sections(text):
    """{"events.json": body, ...} for every '### <name>' heading."""
    out = {}
    parts = re.split(r"^### +(\S+)\s*$", text, flags=re.M)
    for i in range(1, len(parts) - 1, 2):
        out[parts[i]] = parts[i + 1]
    return out


def _table_keys(body):
    return [m.group(1) for m in re.finditer(r"^\| `([A-Za-z_][A-Za-z0-9_]*)` \|", body, flags=re.M)]


def _example_keys(body):
    m = re.search(r"```json\n(.*?)\n```", body, flags=re.S)
    if not m:
        raise AssertionError("no JSON example")
    return list(json.loads(m.group(1)).keys())


def _left_out_keys(body):
    """The keys of the "#### Keys left out" table of a section (may be absent)."""
    m = re.search(r"^#### Keys left out\s*$(.*?)(?=^#### |\Z)", body, flags=re.M | re.S)
    return _table_keys(m.group(1)) if m else []


def optional_event_keys():
    """events.json keys written only when they hold something else than the
    value a reader assumes (docs: "Keys left out")."""
    documented()
    return _cache["optional"]


def documented():
    """{"events.json": [keys], "manifest.json": [...], ...} from the document
    (for events.json: the keys every event carries)."""
    if "fields" not in _cache:
        with open(DOC) as f:
            s = _sections(f.read())
        optional = _left_out_keys(s["events.json"])
        fields = {"events.json": [k for k in _table_keys(s["events.json"]) if k not in optional]}
        _cache["optional"] = optional
        for name in ("manifest.json", "metadata.json", "environment.json"):
            fields[name] = _example_keys(s[name])
        if len(fields["events.json"]) < 10:
            raise AssertionError("could not read the events.json table of " + DOC)
        _cache["fields"] = fields
        for name, keys in sorted(KNOWN_MISSING.items()):
            for k, why in sorted(keys.items()):
                print("note: %s %s is not checked: %s" % (name, k, why))
    return _cache["fields"]


def missing_fields(bundle):
    """Human-readable list of the documented keys the bundle lacks."""
    problems = []
    docs = documented()
    for name, keys in docs.items():
        objs = bundle.json(name) if name == "events.json" else [bundle.json(name)]
        known = KNOWN_MISSING.get(name, {})
        need = frozenset(k for k in keys if k not in known)
        if all(o.keys() >= need for o in objs):  # one C-level pass: bundles hold millions of events
            continue
        i, o = next((i, o) for i, o in enumerate(objs) if not o.keys() >= need)
        problems.append("%s[%d] lacks documented %s" % (name, i, sorted(need - o.keys())))
    events = bundle.json("events.json")
    known = frozenset(docs["events.json"]) | frozenset(optional_event_keys())
    extra = set().union(*(o.keys() for o in events)) - known if events else set()
    if extra:
        problems.append("events.json has keys docs/bundle-format.md does not document: %s" % sorted(extra))
    return problems
