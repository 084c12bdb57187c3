"""Synchronous client for BOINC's remote job submission RPCs.

`BoincClient` speaks to `submit_rpc_handler.php` (batches and jobs), `job_file.php` (input
files, `FileOps`) and `get_output.php` / `get_output2.php` (outputs, `OutputOps`) of one
project, as one account. Results are typed dataclasses (`app.backends.boinc.models`); failures
are `BoincError`s whose `retryable` flag tells the caller whether to try again. The client
never retries on its own, except to work around the server's known SQL-duplicate failures in
the file RPCs.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.etree.ElementTree import Element

from app.backends.boinc import models as m
from app.backends.boinc import replies as rp
from app.backends.boinc.download import OutputOps, output_token
from app.backends.boinc.errors import BoincProtocolError
from app.backends.boinc.files import FileOps
from app.backends.boinc.transport import encoded_size, form_size
from app.backends.boinc.xml import add, new_request, serialize

__all__ = ["BoincClient", "output_token"]


class BoincClient(FileOps, OutputOps):
    """Client for one BOINC project and one submitter account."""

    @staticmethod
    def _batch_ref(root: Element, batch_id: int, batch_name: str) -> None:
        if batch_id:
            add(root, "batch_id", batch_id)
        elif batch_name:
            add(root, "batch_name", batch_name)
        else:
            raise ValueError("give batch_id or batch_name")

    def ping(self) -> None:
        """Check that the project answers RPCs (raises when down)."""
        self._rpc("ping", new_request("ping"))

    def probe_request_size(self, nbytes: int) -> None:
        """Send a ``ping`` whose HTTP body is exactly ``nbytes`` long (padded with a child
        element, which ping ignores). Raises when the project drops it: PHP discards a body
        over ``post_max_size`` whole, as it would a submit_batch or an upload that large."""
        root = new_request("ping")
        pad = add(root, "pad", "x")  # not empty: an empty element serialises shorter
        fill = nbytes - form_size(serialize(root)) + 1
        if fill < 1:
            raise ValueError(f"a ping is larger than {nbytes} bytes")
        pad.text = "x" * fill
        self._rpc("ping", root)

    def create_batch(self, app_name: str, batch_name: str = "", expire_time: float = 0.0) -> int:
        """Create an empty batch in state INIT and return its id."""
        root = self._request("create_batch")
        add(root, "app_name", app_name)
        if batch_name:
            add(root, "batch_name", batch_name)
        add(root, "expire_time", expire_time)
        return rp.positive_int(self._rpc("create_batch", root).root, "batch_id", "create_batch")

    def _batch_request(
        self,
        op: str,
        app_name: str,
        jobs: Sequence[m.JobSpec],
        *,
        batch_id: int,
        job_params: m.JobParams | None,
        app_version_num: int,
        priority: int | None,
    ) -> Element:
        if not jobs:
            # An empty batch goes IN_PROGRESS and never becomes COMPLETE.
            raise ValueError("a batch needs at least one job")
        names = [j.name for j in jobs]
        if len(set(names)) != len(names):
            raise ValueError("job names must be unique")
        root = self._request(op)
        batch = add(root, "batch")
        add(batch, "app_name", app_name)
        if batch_id:
            add(batch, "batch_id", batch_id)
        if app_version_num:
            add(batch, "app_version_num", app_version_num)
        if priority is not None:
            add(batch, "priority", priority)
        if job_params is not None:
            params = add(batch, "job_params")
            for key in ("rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound"):
                self._add_positive(params, key, getattr(job_params, key))
            self._add_positive(params, "rsc_disk_bound", job_params.rsc_disk_bound)
            self._add_positive(params, "delay_bound", job_params.delay_bound)
        for job in jobs:
            batch.append(self._job_element(job))
        return root

    def submit_batch_sizes(
        self,
        app_name: str,
        jobs: Sequence[m.JobSpec],
        *,
        batch_id: int,
        job_params: m.JobParams | None = None,
        app_version_num: int = 0,
        priority: int | None = None,
    ) -> tuple[int, list[int]]:
        """The HTTP body of a ``submit_batch`` of ``jobs`` as sizes that add up: the bytes
        every such request carries, and each job's bytes. For splitting a batch under PHP's
        ``post_max_size``, which drops a larger body whole."""
        if not jobs:
            raise ValueError("a batch needs at least one job")
        first = self._batch_request(
            "submit_batch",
            app_name,
            jobs[:1],
            batch_id=batch_id,
            job_params=job_params,
            app_version_num=app_version_num,
            priority=priority,
        )
        each = [encoded_size(serialize(self._job_element(job))) for job in jobs]
        return form_size(serialize(first)) - each[0], each

    @staticmethod
    def _add_positive(parent: Element, tag: str, value: float | None) -> None:
        if value is not None and value > 0:
            add(parent, tag, value)

    @staticmethod
    def _job_element(job: m.JobSpec) -> Element:
        elem = Element("job")
        add(elem, "name", job.name)
        if job.command_line:
            add(elem, "command_line", job.command_line)
        if job.rsc_fpops_est:
            add(elem, "rsc_fpops_est", job.rsc_fpops_est)
        if job.priority is not None:
            add(elem, "priority", job.priority)
        for inp in job.inputs:
            f = add(elem, "input_file")
            if isinstance(inp, m.LocalInput):
                add(f, "mode", "local_staged")
                add(f, "source", inp.phys_name)
            else:
                add(f, "mode", "remote")
                add(f, "url", inp.url)
                add(f, "nbytes", inp.nbytes)
                add(f, "md5", inp.md5)
        return elem

    def submit_batch(
        self,
        batch_id: int,
        app_name: str,
        jobs: Sequence[m.JobSpec],
        *,
        job_params: m.JobParams | None = None,
        app_version_num: int = 0,
        priority: int | None = None,
    ) -> int:
        """Create the jobs of an INIT batch (one call per batch) and return the batch id."""
        if batch_id <= 0:
            # Without one the server makes a fresh batch, outside the race-free order (3.6).
            raise ValueError("submit_batch needs the id of a batch made by create_batch")
        root = self._batch_request(
            "submit_batch",
            app_name,
            jobs,
            batch_id=batch_id,
            job_params=job_params,
            app_version_num=app_version_num,
            priority=priority,
        )
        return rp.positive_int(self._rpc("submit_batch", root).root, "batch_id", "submit_batch")

    def estimate_batch(
        self, app_name: str, jobs: Sequence[m.JobSpec], *, batch_id: int = 0
    ) -> float:
        """Estimated run time in seconds of a batch like `jobs` (nothing is created)."""
        root = self._batch_request(
            "estimate_batch",
            app_name,
            jobs,
            batch_id=batch_id,
            job_params=None,
            app_version_num=0,
            priority=None,
        )
        reply = self._rpc("estimate_batch", root)
        return rp.number(reply.root, "seconds", "estimate_batch")

    def query_batches(self, *, get_cpu_time: bool = False) -> list[m.BatchInfo]:
        """All batches of the account except retired ones."""
        root = self._request("query_batches")
        if get_cpu_time:
            add(root, "get_cpu_time", 1)
        reply = self._rpc("query_batches", root)
        return [rp.batch_info(b) for b in reply.root.findall("batch")]

    def query_batch(
        self,
        batch_id: int = 0,
        batch_name: str = "",
        *,
        get_cpu_time: bool = False,
        get_job_details: bool = True,
    ) -> m.BatchDetail:
        """One batch (by id, else by name) with its jobs."""
        root = self._request("query_batch")
        self._batch_ref(root, batch_id, batch_name)
        if get_cpu_time:
            add(root, "get_cpu_time", 1)
        if get_job_details:
            add(root, "get_job_details", 1)
        return rp.batch_detail(self._rpc("query_batch", root).root)

    def query_batch2(
        self, batch_names: Sequence[str], min_mod_time: float = 0.0
    ) -> m.QueryBatch2Result:
        """Job statuses of batches by name; with min_mod_time, only jobs changed since."""
        root = self._request("query_batch2")
        add(root, "min_mod_time", min_mod_time)
        for name in batch_names:
            add(root, "batch_name", name)
        return rp.query_batch2_result(self._rpc("query_batch2", root).root, batch_names)

    def query_job(self, job_id: int) -> tuple[m.JobInstance, ...]:
        """The instances of a job (by workunit id)."""
        root = self._request("query_job")
        add(root, "job_id", job_id)
        return rp.job_instances(self._rpc("query_job", root).root)

    def query_completed_job(self, job_name: str) -> m.CompletedJob:
        """Outcome of a finished job: exit status, times and stderr of its instance."""
        root = self._request("query_completed_job")
        add(root, "job_name", job_name)
        try:
            return rp.completed_job(self._rpc("query_completed_job", root).root)
        except BoincProtocolError as exc:
            # Without a canonical result the server's fallback query is broken (section 2.9):
            # the reply stops after <error_mask>. Keep what it did say.
            partial = rp.salvage_completed_job(exc)
            if partial is None:
                raise
            return partial

    def get_templates(self, app_name: str = "", *, job_name: str = "") -> m.Templates:
        """The app's default input and output templates (by app, or by one of its jobs)."""
        root = self._request("get_templates")
        if app_name:
            add(root, "app_name", app_name)
        elif job_name:
            add(root, "job_name", job_name)
        else:
            raise ValueError("give app_name or job_name")
        # Template text is real markup (<name><OUTFILE_0/></name>): no raw-field repair.
        return rp.templates(self._rpc("get_templates", root, raw_fields=()).root)

    def abort_jobs(self, job_names: Sequence[str]) -> list[str]:
        """Abort jobs by name; return the names the server reported as aborted."""
        root = self._request("abort_jobs")
        for name in job_names:
            add(root, "job_name", name)
        reply = self._rpc("abort_jobs", root)
        # Real servers print malformed `<aborted NAME>` lines (removed by the parser); a fixed
        # server would print elements.
        elements = [(e.text or "").strip() for e in reply.root.findall("aborted")]
        return list(reply.aborted) + elements

    def _batch_op(self, op: str, batch_id: int, batch_name: str, expire: float | None) -> None:
        root = self._request(op)
        self._batch_ref(root, batch_id, batch_name)
        if expire is not None:
            add(root, "expire_time", expire)
        self._rpc(op, root)

    def abort_batch(self, batch_id: int = 0, batch_name: str = "") -> None:
        """Abort every job of a batch; the batch becomes ABORTED."""
        self._batch_op("abort_batch", batch_id, batch_name, None)

    def retire_batch(self, batch_id: int = 0, batch_name: str = "") -> None:
        """Retire a batch (download outputs first); it leaves query_batches."""
        self._batch_op("retire_batch", batch_id, batch_name, None)

    def set_expire_time(self, expire_time: float, batch_id: int = 0, batch_name: str = "") -> None:
        """Set the batch lease: after it the project aborts and retires the batch."""
        self._batch_op("set_expire_time", batch_id, batch_name, expire_time)
