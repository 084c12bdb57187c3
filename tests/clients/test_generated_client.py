"""The generated client (clients/python/boinc_gateway_client) drives a whole round trip against
a live server: upload raw bytes, submit a batch, follow it, download outputs, read errors."""

from __future__ import annotations

import hashlib
import io
import time
import uuid
import zipfile

from boinc_gateway_client import AuthenticatedClient
from boinc_gateway_client.api.batches import (
    create_batch,
    get_batch,
    get_batch_outputs_zip,
    list_batch_jobs,
)
from boinc_gateway_client.api.files import put_file, query_files
from boinc_gateway_client.api.jobs import get_job, get_job_output, get_job_stdout
from boinc_gateway_client.api.users import get_me
from boinc_gateway_client.models import (
    BatchCreate,
    BatchSummary,
    FileQuery,
    FileQueryResult,
    InputSpec,
    JobOut,
    JobSpec,
    PageJobListItem,
    Problem,
    UploadedFile,
)
from boinc_gateway_client.types import File

from tests.clients.conftest import Server


def test_submit_and_download(server: Server, user_token: str) -> None:
    data = b"generated clients work\n" * 100
    md5 = hashlib.md5(data).hexdigest()
    name = f"gen#{uuid.uuid4().hex[:8]}"
    with AuthenticatedClient(base_url=server.url, token=user_token, timeout=30) as client:
        me = get_me.sync(client=client)
        assert me is not None and not isinstance(me, Problem) and me.admin is False

        missing = query_files.sync(client=client, body=FileQuery(md5s=[md5]))
        assert isinstance(missing, FileQueryResult) and missing.missing == [md5]

        put = put_file.sync_detailed(md5, client=client, body=File(payload=io.BytesIO(data)))
        assert put.status_code == 201 and isinstance(put.parsed, UploadedFile)
        assert put.parsed.size == len(data) and put.parsed.created
        again = put_file.sync_detailed(md5, client=client, body=File(payload=io.BytesIO(data)))
        assert again.status_code == 200
        # HEAD through the client's own httpx session: the generated head_file() parses the
        # (empty) 200 body as JSON, because the document declares one (see test_openapi_drift)
        assert client.get_httpx_client().head(f"/v1/files/{md5}").status_code == 200

        wrong = put_file.sync(md5, client=client, body=File(payload=io.BytesIO(b"other bytes")))
        assert isinstance(wrong, Problem) and wrong.code == "md5_mismatch"
        assert wrong.status == 400 and wrong["md5s"] == [md5]

        body = BatchCreate(
            name=name,
            app="uppercase",
            jobs=[
                JobSpec(name=f"{name}.{i}", args=[], inputs=[InputSpec(name="in", md5=md5)])
                for i in range(2)
            ],
        )
        created = create_batch.sync_detailed(client=client, body=body)
        assert created.status_code == 201 and isinstance(created.parsed, BatchSummary)
        assert created.parsed.state == "in_progress" and created.parsed.njobs == 2
        retry = create_batch.sync_detailed(client=client, body=body)
        assert retry.status_code == 200

        deadline = time.monotonic() + 60
        while True:
            summary = get_batch.sync(name, client=client)
            assert isinstance(summary, BatchSummary)
            if summary.state == "complete":
                break
            assert time.monotonic() < deadline, summary
            time.sleep(0.1)
        assert summary.counts.additional_properties.get("done") == 2

        jobs = list_batch_jobs.sync(name, client=client)
        assert isinstance(jobs, PageJobListItem)
        assert sorted(j.name for j in jobs.items) == [f"{name}.0", f"{name}.1"]

        job = get_job.sync(f"{name}.0", client=client)
        assert isinstance(job, JobOut) and job.exit_code == 0
        [out] = job.outputs
        assert out.name == "out" and out.md5 == hashlib.md5(data.upper()).hexdigest()

        file = get_job_output.sync(f"{name}.0", "out", client=client)
        assert isinstance(file, File) and file.payload.read() == data.upper()
        stdout = get_job_stdout.sync(f"{name}.0", client=client)
        assert isinstance(stdout, str) and "uppercase: done" in stdout

        archive = get_batch_outputs_zip.sync(name, client=client)
        assert isinstance(archive, File)
        with zipfile.ZipFile(io.BytesIO(archive.payload.read())) as zf:
            assert sorted(zf.namelist()) == [f"{name}.0/out", f"{name}.1/out"]
            assert zf.read(f"{name}.1/out") == data.upper()


def test_errors_are_typed_problems(server: Server, user_token: str) -> None:
    with AuthenticatedClient(base_url=server.url, token=user_token, timeout=30) as client:
        missing = get_batch.sync("no-such-batch", client=client)
        assert isinstance(missing, Problem)
        assert (missing.status, missing.code) == (404, "batch_not_found")
        assert missing.detail == "no batch named no-such-batch"
        assert missing["batch"] == "no-such-batch"
    with AuthenticatedClient(base_url=server.url, token="wrong", timeout=30) as client:
        denied = get_me.sync(client=client)
        assert isinstance(denied, Problem) and denied.code == "unauthorized"
