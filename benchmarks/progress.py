"""Progress lines for `make bench`: a long suite says what it is doing as it goes, so a run
that is slow or cut off shows where it was."""

from __future__ import annotations

import time

_STARTED = time.monotonic()


def progress(message: str) -> None:
    elapsed = int(time.monotonic() - _STARTED)
    print(f"[bench {elapsed // 60:02d}:{elapsed % 60:02d}] {message}", flush=True)
