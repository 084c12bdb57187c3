"""Routes: content-addressed files (streamed upload, download with Range, dedup query)."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, File, Query, Request, Response, UploadFile, status
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse
from starlette import responses as starlette_responses
from starlette.requests import ClientDisconnect

from app.deps import DbDep, ReadSessionDep, SessionDep, SettingsDep, StoreDep, UserDep
from app.errors import (
    BatchNotFound,
    BatchState,
    FileNotFound,
    FileTooLarge,
    IncompleteUpload,
    InvalidCursor,
    InvalidRequest,
    Md5Mismatch,
    QuotaExceeded,
    RangeNotSatisfiable,
    StorageFull,
    responses,
)
from app.models import User
from app.schemas import (
    FILE_NAME_RE,
    FileInfo,
    FileQuery,
    FileQueryResult,
    Md5,
    Name,
    Page,
    UploadedFile,
)
from app.services import files as svc
from app.services.store import FileStore

router = APIRouter(prefix="/v1/files", tags=["files"])

_WRITE_BUFFER = 1 << 20
_OCTET_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}


def _write(fh: Any, digest: Any, data: bytes) -> None:
    digest.update(data)
    fh.write(data)


@router.put(
    "/{md5}",
    operation_id="put_file",
    status_code=status.HTTP_201_CREATED,
    openapi_extra=_OCTET_BODY,
    responses={
        200: {"description": "You already had this file", "model": UploadedFile},
        **responses(
            Md5Mismatch,
            FileTooLarge,
            IncompleteUpload,
            BatchNotFound,
            BatchState,
            QuotaExceeded,
            StorageFull,
        ),
    },
)
async def put_file(
    md5: Md5,
    request: Request,
    response: Response,
    db: DbDep,
    store: StoreDep,
    settings: SettingsDep,
    user: UserDep,
    batch: Annotated[Name | None, Query(description="associate with this batch")] = None,
) -> UploadedFile:
    """Upload raw bytes named by their MD5 (streamed; nothing is kept unless the MD5 matches)."""
    limit = settings.max_file_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise FileTooLarge(f"the limit is {limit} bytes", limit=limit)
    digest = hashlib.md5(usedforsecurity=False)
    size = 0
    with store.temp() as (fh, tmp):
        buf = bytearray()
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise FileTooLarge(f"the limit is {limit} bytes", limit=limit)
                buf += chunk
                if len(buf) >= _WRITE_BUFFER:
                    await run_in_threadpool(_write, fh, digest, bytes(buf))
                    buf.clear()
        except ClientDisconnect as exc:
            raise IncompleteUpload("the connection closed before the body was complete") from exc
        await run_in_threadpool(_write, fh, digest, bytes(buf))
        if declared is not None and declared.isdigit() and int(declared) != size:
            raise IncompleteUpload(f"got {size} of {declared} bytes")
        got = digest.hexdigest()
        if not hmac.compare_digest(got, md5):
            raise Md5Mismatch(f"the body's MD5 is {got}, not {md5}", md5s=[md5], actual=got)
        await run_in_threadpool(fh.flush)
        created = await run_in_threadpool(
            _record, db, store, user, md5, size, tmp, None, batch, settings.file_keep_seconds
        )
    if not created:
        response.status_code = status.HTTP_200_OK
    return UploadedFile(md5=md5, size=size, created=created)


def _record(
    db: Any,
    store: FileStore,
    user: User,
    md5: str,
    size: int,
    tmp: Any,
    filename: str | None,
    batch: str | None,
    keep: float,
) -> bool:
    with db.session() as session:
        return svc.record_upload(
            session,
            store=store,
            user=user,
            md5=md5,
            size=size,
            temp=tmp,
            filename=filename,
            batch_name=batch,
            keep_seconds=keep,
        )


def _store_upload(
    db: Any,
    store: FileStore,
    user: User,
    part: UploadFile,
    limit: int,
    keep: float,
    batch: str | None,
) -> UploadedFile:
    digest = hashlib.md5(usedforsecurity=False)
    size = 0
    with store.temp() as (fh, tmp):
        part.file.seek(0)
        while chunk := part.file.read(_WRITE_BUFFER):
            size += len(chunk)
            if size > limit:
                raise FileTooLarge(f"{part.filename}: the limit is {limit} bytes", limit=limit)
            _write(fh, digest, chunk)
        fh.flush()
        md5 = digest.hexdigest()
        name = part.filename if part.filename and FILE_NAME_RE.fullmatch(part.filename) else None
        created = _record(db, store, user, md5, size, tmp, name, batch, keep)
    return UploadedFile(md5=md5, size=size, filename=part.filename, created=created)


@router.post(
    "",
    operation_id="upload_files",
    status_code=status.HTTP_201_CREATED,
    responses=responses(
        FileTooLarge, InvalidRequest, BatchNotFound, BatchState, QuotaExceeded, StorageFull
    ),
)
def upload_files(
    file: Annotated[list[UploadFile], File(description="one or more files")],
    db: DbDep,
    store: StoreDep,
    settings: SettingsDep,
    user: UserDep,
    batch: Annotated[Name | None, Query(description="associate with this batch")] = None,
) -> list[UploadedFile]:
    """Upload files as multipart form parts named ``file`` (for browsers and ``curl -F``)."""
    if len(file) > 1000:
        raise InvalidRequest("at most 1000 files per request")
    return [
        _store_upload(
            db, store, user, part, settings.max_file_bytes, settings.file_keep_seconds, batch
        )
        for part in file
    ]


def ranged_file(request: Request, path: Path, size: int, md5: str) -> FileResponse:
    """A download that honours ``Range``; an unusable range is a problem+json error."""
    header = request.headers.get("range")
    if header:
        try:
            FileResponse._parse_range_header(header, size)
        except starlette_responses.RangeNotSatisfiable as exc:
            raise RangeNotSatisfiable(
                f"the file has {size} bytes", headers={"Content-Range": f"bytes */{size}"}
            ) from exc
        except starlette_responses.MalformedRangeHeader as exc:
            raise InvalidRequest(f"bad Range header: {exc}") from exc
    return FileResponse(path, media_type="application/octet-stream", headers={"ETag": f'"{md5}"'})


@router.head(
    "/{md5}",
    operation_id="head_file",
    response_class=Response,
    responses={
        200: {"description": "You have this file (Content-Length is its size)", "content": {}},
        401: {"description": "Missing or invalid token (code: unauthorized)", "content": {}},
        404: {"description": "You do not have this file (code: file_not_found)", "content": {}},
        503: {"description": "Service unavailable (code: unavailable)", "content": {}},
    },
)
def head_file(md5: Md5, session: ReadSessionDep, user: UserDep) -> Response:
    """Whether you have this file (200 with its size) or not (404)."""
    row = svc.get_file_or_404(session, user=user, md5=md5)
    return Response(
        headers={"Content-Length": str(row.size), "ETag": f'"{md5}"', "Accept-Ranges": "bytes"},
        media_type="application/octet-stream",
    )


@router.get(
    "/{md5}",
    operation_id="get_file",
    response_class=FileResponse,
    responses={
        200: {
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            },
            "description": "The bytes (Range supported)",
        },
        **responses(FileNotFound, RangeNotSatisfiable, InvalidRequest),
    },
)
def get_file(
    md5: Md5, request: Request, session: ReadSessionDep, store: StoreDep, user: UserDep
) -> FileResponse:
    """Download a file you have (ETag is the MD5; ``Range`` requests are honoured)."""
    row = svc.get_file_or_404(session, user=user, md5=md5)
    return ranged_file(request, store.path(md5), row.size, md5)


@router.post(
    "/query",
    operation_id="query_files",
    responses=responses(BatchNotFound, BatchState),
)
def query_files(
    body: FileQuery, session: SessionDep, settings: SettingsDep, user: UserDep
) -> FileQueryResult:
    """Which of these files you still need to upload; the present ones join the batch."""
    missing = svc.query(
        session,
        user=user,
        md5s=body.md5s,
        batch_name=body.batch,
        keep_seconds=settings.file_keep_seconds,
    )
    return FileQueryResult(missing=missing)


@router.get("", operation_id="list_files", responses=responses(InvalidCursor))
def list_files(
    session: ReadSessionDep,
    user: UserDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: str | None = None,
) -> Page[FileInfo]:
    """Your files, with the batches that use them."""
    items, nxt = svc.list_files(session, user=user, limit=limit, cursor=cursor)
    return Page[FileInfo](items=items, next_cursor=nxt)


@router.delete(
    "/{md5}",
    operation_id="delete_file",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=responses(FileNotFound),
)
def delete_file(md5: Md5, session: SessionDep, user: UserDep) -> None:
    """Drop your claim on a file; its bytes go once nothing else needs them."""
    svc.drop_claim(session, user=user, md5=md5)
