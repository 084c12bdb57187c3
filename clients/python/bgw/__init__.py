"""bgw: the boinc-gateway command line for users (upload, submit, follow, fetch).

Hand-written and packaged with the generated ``boinc_gateway_client``; it talks to the REST
API over plain httpx so uploads and downloads stream with progress.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("boinc-gateway-client")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0+source"
