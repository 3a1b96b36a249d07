"""The fields docs/bundle-format.md documents, read from the document itself,
so a field that is documented but not written (or renamed on one side only)
fails every e2e bundle check. Standard library only.

- events.json: every key of the table under "### events.json", except the
  keys of its "#### Keys left out" table (written only when they do not hold
  the value a reader assumes); and no event carries a key documented in
  neither;
- manifest.json, metadata.json, environment.json: every top-level key of the
  JSON example under their "### <file>" heading;
- keys that only some bundles carry are named under the heading on one line
  "Keys written only for the reasons `oom`, `limit` and `fail_after` (...):
  `outcome`, `outcome_detail`." : those keys must be present in bundles of
  those reasons and absent from the others;
- metadata.json recovered_failures.listed: every key of the example's
  first entry, in every entry.
"""
import json
import os
import re

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "bundle-format.md")

# Documented keys the writer does not produce yet, with the reason; listed so
# the gap is visible (printed once) instead of silently skipped.
KNOWN_MISSING = {}

_ONLY_FOR = re.compile(r"^Keys written only for the reasons (.+?) \(.*\): (.+?)\.?$", re.M)

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


def _example(body):
    m = re.search(r"```json\n(.*?)\n```", body, flags=re.S)
    if not m:
        raise AssertionError("no JSON example")
    return json.loads(m.group(1))


def _example_keys(body):
    return list(_example(body).keys())


def _only_for(body):
    """(reasons, keys) of the "Keys written only for the reasons" line, or None."""
    m = _ONLY_FOR.search(body)
    if not m:
        return None
    return frozenset(re.findall(r"`([a-z_]+)`", m.group(1))), re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", m.group(2))


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
        _cache["only_for"] = {n: _only_for(s[n]) for n in ("manifest.json", "metadata.json") if _only_for(s[n])}
        if "metadata.json" not in _cache["only_for"]:
            raise AssertionError("no 'Keys written only for the reasons' line under metadata.json in " + DOC)
        _cache["listed_keys"] = list(_example(s["metadata.json"])["recovered_failures"]["listed"][0].keys())
        for name, keys in sorted(KNOWN_MISSING.items()):
            for k, why in sorted(keys.items()):
                print("note: %s %s is not checked: %s" % (name, k, why))
    return _cache["fields"]


def _conditional_problems(bundle, name, known):
    """Keys documented for some reasons only: absent from the other bundles."""
    rule = _cache["only_for"].get(name)
    if not rule:
        return frozenset(), []
    reasons, keys = rule
    o = bundle.json(name)
    if o.get("reason") in reasons:
        return frozenset(), []
    extra = sorted(k for k in keys if k in o and k not in known)
    skip = frozenset(keys)
    if extra:
        return skip, ["%s of a %r bundle carries %s, documented only for reasons %s" %
                      (name, o.get("reason"), extra, sorted(reasons))]
    return skip, []


def _listed_problems(bundle, known):
    if "recovered_failures" in known:
        return []
    rf = bundle.json("metadata.json").get("recovered_failures")
    if not isinstance(rf, dict) or not isinstance(rf.get("listed"), list):
        return ["metadata.json recovered_failures is not {count, listed: [...]}: %r" % (rf,)]
    need = frozenset(_cache["listed_keys"])
    bad = [i for i, e in enumerate(rf["listed"]) if not isinstance(e, dict) or not e.keys() >= need]
    return ["metadata.json recovered_failures.listed[%d] lacks documented keys" % bad[0]] if bad else []


def missing_fields(bundle):
    """Human-readable list of the documented keys the bundle lacks (and of the
    keys documented for other reasons only that it carries)."""
    problems = []
    docs = documented()
    for name, keys in docs.items():
        objs = bundle.json(name) if name == "events.json" else [bundle.json(name)]
        known = KNOWN_MISSING.get(name, {})
        skip, extra = _conditional_problems(bundle, name, known) if name != "events.json" else (frozenset(), [])
        problems += extra
        need = frozenset(k for k in keys if k not in known and k not in skip)
        if all(o.keys() >= need for o in objs):  # one C-level pass: bundles hold millions of events
            continue
        i, o = next((i, o) for i, o in enumerate(objs) if not o.keys() >= need)
        problems.append("%s[%d] lacks documented %s" % (name, i, sorted(need - o.keys())))
    events = bundle.json("events.json")
    known = frozenset(docs["events.json"]) | frozenset(optional_event_keys())
    extra = set().union(*(o.keys() for o in events)) - known if events else set()
    if extra:
        problems.append("events.json has keys docs/bundle-format.md does not document: %s" % sorted(extra))
    problems += _listed_problems(bundle, KNOWN_MISSING.get("metadata.json", {}))
    return problems
