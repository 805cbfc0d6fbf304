"""plotly.js, served from the installed ``plotly`` package (no CDN, works offline)."""

from __future__ import annotations

import gzip
from functools import cache
from importlib.resources import files
from pathlib import Path


@cache
def plotly_js_path() -> Path:
    path = Path(str(files("plotly") / "package_data" / "plotly.min.js"))
    if not path.is_file():
        raise FileNotFoundError(f"plotly.js is missing from the plotly package ({path})")
    return path


@cache
def plotly_js_name() -> str:
    """A versioned file name, so browsers may cache it for good."""
    from plotly.offline import get_plotlyjs_version

    return f"plotly-{get_plotlyjs_version()}.min.js"


@cache
def plotly_js_gzip() -> bytes:
    """plotly.js compressed once (about a third of its 4.6 MB), for clients that accept gzip."""
    return gzip.compress(plotly_js_path().read_bytes(), compresslevel=9, mtime=0)
