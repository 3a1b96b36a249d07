"""gpumemrec: a flight recorder for GPU memory.

The wheel carries the `gpumemrec` command and libgpumemrec.so; this package
reads the bundles they write:

    import gpumemrec
    b = gpumemrec.open("gpumemrec-dumps/oom_dump_...")
    b.failure.api, b.failure.requested_bytes, b.outcome
    b.sites[0].bytes, b.sites[0].site_frame
    b.to_pandas("events")        # with pandas installed
    b                            # in a notebook: the HTML report

Run a program under the recorder with `gpumemrec run -- python train.py` or
`python -m gpumemrec run train.py`.
"""
from gpumemrec._native import BundleError, CommandError, command, library
from gpumemrec.bundle import Allocation, Bundle, Device, Event, Failure, Frame, Site, Stack, open

__all__ = ["open", "Bundle", "BundleError", "CommandError", "Allocation", "Device", "Event", "Failure", "Frame",
           "Site", "Stack", "command", "library"]
