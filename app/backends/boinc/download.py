"""Streamed output downloads from get_output.php and get_output2.php.

A download is written to a temporary file in the destination's own directory and renamed over
the destination only once complete, so readers never see a partial file and nothing is written
anywhere else (the server's suggested file name is reported, never used as a path).
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import httpx

from app.backends.boinc import models as m
from app.backends.boinc.errors import (
    BoincDatabaseError,
    BoincError,
    BoincOutputError,
    BoincProjectDownError,
)
from app.backends.boinc.transport import BoincTransport

__all__ = ["OutputOps", "download_to", "output_token"]

Dest = str | os.PathLike[str]

# How much of a refusal body to read for the error message.
_MAX_ERROR_BYTES = 64 * 1024
_FILENAME_RE = re.compile(r'filename\*?=(?:UTF-8\'\')?"?([^";]+)"?', re.IGNORECASE)


def output_token(authenticator: str, key: str) -> str:
    """get_output.php token: lower-case hex md5(authenticator + key), key a name or id."""
    return hashlib.md5((authenticator + key).encode(), usedforsecurity=False).hexdigest()


def _refusal(op: str, resp: httpx.Response) -> BoincError:
    """The error a non-attachment reply carries: `ERROR: ...` text or a die() page."""
    head = b""
    for chunk in resp.iter_bytes():
        head += chunk
        if len(head) >= _MAX_ERROR_BYTES:
            break
    text = html.unescape(re.sub(r"<[^>]+>", " ", head.decode("utf-8", errors="replace")))
    text = " ".join(text.split())
    text = text.removeprefix("ERROR:").strip() or f"empty reply (HTTP {resp.status_code})"
    message = f"{op}: {text[:500]}"
    # The site-wide error pages for a stopped project or database are transient.
    if "down for maintenance" in text.lower():
        return BoincProjectDownError(message)
    if "connect to database" in text.lower():
        return BoincDatabaseError(message)
    return BoincOutputError(message)


def check_destination(dest: Path) -> None:
    """Refuse a destination that is a directory or lies in a missing directory."""
    if dest.is_dir():
        raise ValueError(f"destination is a directory: {dest}")
    if not dest.parent.is_dir():
        raise FileNotFoundError(f"destination directory does not exist: {dest.parent}")


def download_to(
    http: httpx.Client,
    url: str,
    params: dict[str, str | int],
    dest: Path,
    *,
    op: str,
    check_status: Callable[[str, httpx.Response], None],
) -> m.DownloadResult:
    """Stream a GET to `dest` through a temp file in the same directory."""
    check_destination(dest)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp_path = Path(tmp)
    digest = hashlib.md5(usedforsecurity=False)
    nbytes = 0
    try:
        with os.fdopen(fd, "wb") as out, http.stream("GET", url, params=params) as resp:
            check_status(op, resp)
            disposition = resp.headers.get("content-disposition", "")
            # Every successful get_output*.php download goes through do_download(), which
            # sends an attachment disposition; errors are die() text with HTTP 200. Keying on
            # the header also accepts outputs whose content happens to start with "ERROR:".
            if "attachment" not in disposition.lower():
                raise _refusal(op, resp)
            for chunk in resp.iter_bytes():
                out.write(chunk)
                digest.update(chunk)
                nbytes += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp_path, dest)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    match = _FILENAME_RE.search(disposition)
    return m.DownloadResult(
        path=str(dest),
        nbytes=nbytes,
        md5=digest.hexdigest(),
        server_filename=match.group(1).strip() if match else None,
    )


class OutputOps(BoincTransport):
    """Output downloads with the token schemes of get_output.php (section 4.1)."""

    def _download(
        self, op: str, endpoint: str, params: dict[str, str | int], dest: Dest
    ) -> m.DownloadResult:
        check_destination(Path(dest))
        self._count(op)
        with self._mapped(op):
            return download_to(
                self._http,
                self.project_url + endpoint,
                params,
                Path(dest),
                op=op,
                check_status=self._check_status,
            )

    def download_result_file(self, result_name: str, file_num: int, dest: Dest) -> m.DownloadResult:
        """Output file `file_num` of an instance, via get_output.php (md5 token)."""
        params: dict[str, str | int] = {
            "cmd": "result_file",
            "result_name": result_name,
            "file_num": file_num,
            "auth_str": output_token(self.authenticator, result_name),
        }
        return self._download("get_output:result_file", "get_output.php", params, dest)

    def download_workunit_file(self, wu_name: str, file_num: int, dest: Dest) -> m.DownloadResult:
        """Output file `file_num` of a job's canonical instance (raw authenticator token)."""
        params: dict[str, str | int] = {
            "cmd": "workunit_file",
            "wu_name": wu_name,
            "file_num": file_num,
            # Not hashed: the code compares the raw key, whatever the wiki says.
            "auth_str": self.authenticator,
        }
        return self._download("get_output:workunit_file", "get_output.php", params, dest)

    def download_workunit_files(self, wu_id: int, dest: Dest) -> m.DownloadResult:
        """Zip of a job's canonical outputs (0 bytes when there are none)."""
        params: dict[str, str | int] = {
            "cmd": "workunit_files",
            "wu_id": wu_id,
            "auth_str": output_token(self.authenticator, str(wu_id)),
        }
        return self._download("get_output:workunit_files", "get_output.php", params, dest)

    def download_batch_files(self, batch_id: int, dest: Dest) -> m.DownloadResult:
        """Zip of every canonical output of a batch (0 bytes when there are none)."""
        params: dict[str, str | int] = {
            "cmd": "batch_files",
            "batch_id": batch_id,
            "auth_str": output_token(self.authenticator, str(batch_id)),
        }
        return self._download("get_output:batch_files", "get_output.php", params, dest)

    def download_output2(
        self,
        dest: Dest,
        *,
        result_id: int = 0,
        wu_id: int = 0,
        batch_id: int = 0,
    ) -> m.DownloadResult:
        """Outputs under logical names via get_output2.php (result, workunit or batch)."""
        if sum(bool(x) for x in (result_id, wu_id, batch_id)) != 1:
            raise ValueError("give exactly one of result_id, wu_id, batch_id")
        if result_id:
            params: dict[str, str | int] = {"cmd": "result", "result_id": result_id}
        elif wu_id:
            params = {"cmd": "workunit", "wu_id": wu_id}
        else:
            params = {"cmd": "batch", "batch_id": batch_id}
        params["auth"] = self.authenticator
        return self._download(f"get_output2:{params['cmd']}", "get_output2.php", params, dest)
