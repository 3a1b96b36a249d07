"""A bundle as plain Python objects: gpumemrec.open(path).

Everything is read by the C++ reader (common/bundle_reader.cpp) through the
`gpumemrec` command the wheel carries, never by parsing the bundle's files
here: `report --json` (docs/cli.md) for the failure, verdict, device, live
bytes and sites, and `query --json` (SQL over the same reader's tables) for
events, allocations and stacks, loaded when first used. A bad bundle is
refused with the reader's own one-line error (BundleError), exactly as the
command-line tools refuse it. The keys are the documented --json interface;
keys a newer command adds (a site's `site_frame` and `library`,
`device_accounting`, `roles`, `peak`, `advice`) are picked up when present
and None (advice: empty) when not.
"""
import builtins
import html as html_lib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from gpumemrec._native import BundleError, run_cli

_ALL = "1000000000"  # --top / --frames: every site, every frame


@dataclass
class Frame:
    kind: str  # "python", "native", "other"
    function: str
    file: str
    line: int
    module: str
    offset: int
    short: str = ""  # "function (file:line)" as the report prints it ("" for stacks no site or failure uses)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Frame":
        return cls(kind=d.get("kind", ""), function=d.get("function", ""), file=d.get("file", ""),
                   line=d.get("line") or 0, module=d.get("module", ""), offset=d.get("offset") or 0,
                   short=d.get("short", ""))


@dataclass
class Stack:
    stack_id: int
    python: str  # captured / borrowed / native_thread / no_gil / not_python / disabled
    frames: List[Frame]  # innermost first
    site_frame: Optional[int] = None  # index into frames: who holds the memory (when the bundle says)
    library: Optional[str] = None  # the library the allocation went through (when the bundle says)
    autograd_node: Optional[str] = None  # PyTorch's backward node, e.g. "MmBackward0" (when the bundle says)
    python_thread: Optional[int] = None  # python "borrowed" (or python_borrow "outer"): the thread that lent its Python frames

    @property
    def site(self) -> Optional[Frame]:
        """The site frame when the bundle names one, else None."""
        if self.site_frame is None or not 0 <= self.site_frame < len(self.frames):
            return None
        return self.frames[self.site_frame]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Stack":
        frames = [Frame.from_json(f) for f in d.get("frames") or []]
        sf = d.get("site_frame")
        if isinstance(sf, dict):  # a frame object rather than an index
            sf = next((i for i, f in enumerate(frames) if f == Frame.from_json(sf)), None)
        site = d.get("site") if isinstance(d.get("site"), dict) else {}
        lib, lender = d.get("library"), d.get("python_thread")
        node = d.get("autograd_node", site.get("autograd_node"))  # query's column, report's site
        return cls(stack_id=d.get("stack_id") or 0, python=d.get("python") or "", frames=frames,
                   site_frame=sf if isinstance(sf, int) else None, library=lib if isinstance(lib, str) else None,
                   autograd_node=node if isinstance(node, str) else None,
                   python_thread=lender if isinstance(lender, int) and not isinstance(lender, bool) else None)


@dataclass
class Failure:
    api: str
    requested_bytes: int
    device: int
    error_name: str
    error_code: int
    stack: Stack


@dataclass
class Device:
    id: int
    free_bytes: Optional[int]
    total_bytes: Optional[int]
    short_by_bytes: Optional[int]


@dataclass
class Site:
    """Live bytes grouped by call stack, largest first (common/live_sites.h)."""
    rank: int
    bytes: int
    count: int
    percent: float
    stack: Stack

    @property
    def site_frame(self) -> Optional[Frame]:
        return self.stack.site


@dataclass
class Allocation:
    address: int
    size: int
    device_id: int
    api: str
    memory_type: str
    timestamp: float
    thread_id: int
    stack_id: int
    seq: int


@dataclass
class Event:
    seq: int
    timestamp: float
    event_type: str
    api: str
    device_id: int
    address: int
    size: int
    result: int
    thread_id: int
    stack_id: int
    duration_ns: int
    memory_allocated: int
    memory_change: int
    memory_type: str
    stream: int


def _rows(path: str, sql: str) -> List[Dict[str, Any]]:
    rows = json.loads(run_cli(["query", "--json", path, sql]) or "[]")
    for r in rows:
        r.pop("bundle", None)
    return rows


def _known(cls, row: Dict[str, Any]):
    """cls from the row's keys that cls has (newer columns are ignored)."""
    return cls(**{k: row.get(k) for k in cls.__dataclass_fields__})


def _check_single_bundle(path: str) -> None:
    """A directory of bundles is refused as `gpumemrec html` refuses it."""
    if os.path.isdir(path) and not os.path.exists(os.path.join(path, "manifest.json")):
        for child in sorted(os.listdir(path)):
            if os.path.isfile(os.path.join(path, child, "manifest.json")) and not child.startswith(".tmp-"):
                raise BundleError("%s: is a directory of bundles; give one bundle (see 'gpumemrec ls %s')"
                                  % (path, path))


@dataclass
class Bundle:
    path: str
    name: str
    host: str
    pid: int
    rank: Optional[int]
    backend: str
    reason: str  # oom, limit, fail_after, signal, exit
    timestamp: float
    command: List[str]
    outcome: Optional[str]  # recovered / fatal / unknown; None for signal and exit bundles
    outcome_detail: Optional[str]
    recovery: Optional[Dict[str, Any]]
    recovered_failures: Dict[str, Any]
    failure: Optional[Failure]  # None for signal and exit bundles
    device: Device
    live_bytes: int
    live_allocations: int
    live_bytes_by_device: Dict[int, int]
    sites: List[Site]
    accounting: Optional[Any]  # metadata's device_accounting, when the bundle has it
    report: Dict[str, Any] = field(repr=False)  # the whole `gpumemrec report --json` object
    _cache: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    # ---- loaded on first use (query --json) ---------------------------------

    def _event_rows(self) -> List[Dict[str, Any]]:
        if "events" not in self._cache:
            self._cache["events"] = _rows(self.path, "SELECT * FROM events ORDER BY rowid")
        return self._cache["events"]

    def _allocation_rows(self) -> List[Dict[str, Any]]:
        if "allocations" not in self._cache:
            self._cache["allocations"] = _rows(self.path, "SELECT * FROM allocations ORDER BY rowid")
        return self._cache["allocations"]

    @property
    def events(self) -> List[Event]:
        """The ring, oldest first."""
        return [_known(Event, r) for r in self._event_rows()]

    @property
    def allocations(self) -> List[Allocation]:
        """Everything live at the dump, largest first."""
        return [_known(Allocation, r) for r in self._allocation_rows()]

    @property
    def stacks(self) -> Dict[int, Stack]:
        """Every stack of the bundle by stack_id (the sites' stacks included)."""
        if "stacks" not in self._cache:
            rows = _rows(self.path, "SELECT s.*, f.depth AS frame_depth, f.kind AS frame_kind, f.module AS frame_module, "
                                    "f.offset AS frame_offset, f.function AS frame_function, f.file AS frame_file, "
                                    "f.line AS frame_line FROM stacks s LEFT JOIN frames f "
                                    "ON f.bundle = s.bundle AND f.stack_id = s.stack_id ORDER BY s.stack_id, f.depth")
            stacks: Dict[int, Dict[str, Any]] = {}
            for r in rows:
                d = stacks.setdefault(r["stack_id"], dict({k: v for k, v in r.items() if not k.startswith("frame_")},
                                                          frames=[]))
                if r.get("frame_depth") is not None:
                    d["frames"].append({k[len("frame_"):]: v for k, v in r.items() if k.startswith("frame_")})
            # The report's copies of the same stacks also carry each frame's
            # `short` text (and site_frame/library when the command prints them).
            known = {s.stack.stack_id: s.stack for s in self.sites}
            if self.failure:
                known[self.failure.stack.stack_id] = self.failure.stack
            self._cache["stacks"] = {sid: known.get(sid) or Stack.from_json(d) for sid, d in stacks.items()}
        return self._cache["stacks"]

    @property
    def metadata(self) -> Dict[str, Any]:
        """metadata.json's scalars as the reader read them (query's metadata table)."""
        if "metadata" not in self._cache:
            self._cache["metadata"] = {r["key"]: r["value"] for r in _rows(self.path, "SELECT * FROM metadata")}
        return self._cache["metadata"]

    # ---- memory by role, the peak, what to try (report --json) -----------------

    @property
    def roles(self) -> Optional[Dict[str, Any]]:
        """Memory by role: {"tables": [one per device: device, total_bytes,
        roles_from, rows [{role, layer, name, label, bytes}], notes],
        "framework": framework.json's roles or None, "problem": what was
        wrong with them or None} (docs/cli.md). None from an older command."""
        return self.report.get("roles")

    @property
    def peak(self) -> Optional[Dict[str, Any]]:
        """Each device's high-water mark (peak.json) with the sites and
        libraries live at it, until when it held ("peak_until_ns"), the exact
        peak since the last gap ("after_gap") and memory by role at the peak
        ("roles": {"known", "why_not_known", "bytes": {role: bytes}}), and
        PyTorch's own peaks from an exit digest; None when the bundle has
        neither (docs/bundle-format.md, "peak.json")."""
        return self.report.get("peak")

    def peak_roles(self, device: int = 0) -> Optional[Dict[str, int]]:
        """The peak's bytes by role on `device` (weights, gradients,
        optimizer_state, kv_cache, activations, allocator_cache, unknown,
        outside_framework: they add up to the peak), or None when not known
        (peak["devices"][i]["roles"]["why_not_known"] says why)."""
        for d in (self.peak or {}).get("devices", []):
            roles = d.get("roles") if d.get("device") == device else None
            if roles and roles.get("known"):
                return roles.get("bytes")
        return None

    @property
    def advice(self) -> List[Dict[str, Any]]:
        """"What to try": [{rule, device, evidence, action, source}], empty
        when the bundle holds no evidence for any (docs/advice.md)."""
        return self.report.get("advice") or []

    # ---- pandas and notebooks -------------------------------------------------

    def to_pandas(self, table: str = "allocations"):
        """A pandas DataFrame of "allocations" (default), "events" or "sites".
        pandas is optional: ImportError says how to get it."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Bundle.to_pandas needs pandas: pip install pandas (or gpumemrec[pandas])") from None
        if table == "events":
            return pandas.DataFrame.from_records(self._event_rows(), columns=list(Event.__dataclass_fields__))
        if table == "allocations":
            return pandas.DataFrame.from_records(self._allocation_rows(),
                                                 columns=list(Allocation.__dataclass_fields__))
        if table == "sites":
            rows = [{"rank": s.rank, "bytes": s.bytes, "count": s.count, "percent": s.percent,
                     "stack_id": s.stack.stack_id, "site": _site_text(s), "library": s.stack.library}
                    for s in self.sites]
            return pandas.DataFrame.from_records(rows, columns=["rank", "bytes", "count", "percent", "stack_id",
                                                                "site", "library"])
        raise ValueError("to_pandas: table is 'allocations', 'events' or 'sites', not %r" % (table,))

    def html(self) -> str:
        """The bundle's HTML report, the page `gpumemrec html` writes."""
        if "html" not in self._cache:
            self._cache["html"] = run_cli(["html", self.path, "-o", "-"])
        return self._cache["html"]

    def _repr_html_(self) -> str:
        # The report is a whole page with its own CSS, scripts and element
        # ids: in an iframe it cannot restyle the notebook, and two bundles
        # shown in one notebook do not collide.
        return ('<iframe title="gpumemrec report: %s" style="width:100%%;height:760px;border:1px solid #ccc" '
                'srcdoc="%s"></iframe>' % (html_lib.escape(self.name), html_lib.escape(self.html(), quote=True)))


def _site_text(s: Site) -> str:
    """The site frame's "function (file:line)", else the innermost frame's."""
    f = s.site_frame or (s.stack.frames[0] if s.stack.frames else None)
    return f.short if f else ""


def _accounting(path: str, r: Dict[str, Any]) -> Optional[Any]:
    """device_accounting from the report, else from metadata.json (a file
    the reader has just accepted); None when the bundle has none."""
    if "device_accounting" in r:
        return r["device_accounting"]
    try:
        with builtins.open(os.path.join(path, "metadata.json"), encoding="utf-8") as f:
            return json.load(f).get("device_accounting")
    except (OSError, ValueError, AttributeError):
        return None


def _from_report(path: str, r: Dict[str, Any]) -> Bundle:
    f = r.get("failure")
    failure = None
    if f:
        failure = Failure(api=f.get("api", ""), requested_bytes=f.get("requested_bytes", 0), device=f.get("device", -1),
                          error_name=f.get("error_name", ""), error_code=f.get("error_code", 0),
                          stack=Stack.from_json(f))
    d = r.get("device") or {}
    live = r.get("live") or {}
    sites = [Site(rank=s.get("rank", i + 1), bytes=s.get("bytes", 0), count=s.get("count", 0),
                  percent=s.get("percent", 0.0), stack=Stack.from_json(s)) for i, s in enumerate(r.get("sites") or [])]
    return Bundle(path=path, name=r.get("bundle", os.path.basename(path)), host=r.get("host", ""), pid=r.get("pid", 0),
                  rank=r.get("rank"), backend=r.get("backend", ""), reason=r.get("reason", ""),
                  timestamp=r.get("timestamp", 0.0), command=r.get("command") or [], outcome=r.get("outcome"),
                  outcome_detail=r.get("outcome_detail"), recovery=r.get("recovery"),
                  recovered_failures=r.get("recovered_failures") or {"count": 0, "listed": []}, failure=failure,
                  device=Device(id=d.get("id", -1), free_bytes=d.get("free_bytes"), total_bytes=d.get("total_bytes"),
                                short_by_bytes=d.get("short_by_bytes")),
                  live_bytes=live.get("bytes", 0), live_allocations=live.get("allocations", 0),
                  live_bytes_by_device={int(k): v for k, v in (live.get("by_device") or {}).items()}, sites=sites,
                  accounting=_accounting(path, r), report=r)


def open(path) -> Bundle:  # noqa: A001 (gpumemrec.open, like io.open)
    """Reads the bundle directory `path`. Raises BundleError with the C++
    reader's one-line message for anything it refuses (a missing or
    truncated file, corrupt JSON, a wrong type, an unsupported
    schema_version), FileNotFoundError never: a missing path is a
    BundleError too."""
    path = os.fspath(path)
    if path.startswith("-"):
        path = os.path.join(".", path)  # a path, never an option of the command
    _check_single_bundle(path)
    out = run_cli(["report", "--json", "--top", _ALL, "--frames", _ALL, "--oldest", "0", path])
    return _from_report(path, json.loads(out))
