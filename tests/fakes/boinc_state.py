"""State of the fake BOINC project: the database rows and files the RPC handlers work on.

Mirrors the tables of the protocol reference (2.15.5, 3.2, 6): users with their submit rights,
apps with default templates, batches, workunits (jobs), results (instances), job_file rows,
batch/file associations, and the download and upload hierarchies (kept in memory). The test
hooks (`start_job`, `complete_job`, `fail_job`, the deleters) move rows the way the scheduler,
the volunteer clients and the daemons would.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field

# batch.state
INIT, IN_PROGRESS, COMPLETE, ABORTED, RETIRED = 0, 1, 2, 3, 4
# result.server_state and result.outcome
UNSENT, SRV_IN_PROGRESS, OVER = 2, 4, 5
SUCCESS, CLIENT_ERROR, DIDNT_NEED = 1, 3, 5
# workunit.error_mask bits and their query_batch tokens, in bit order
ERROR_BITS = (
    (1, "couldnt_send_result"),
    (2, "too_many_error_results"),
    (4, "too_many_success_results"),
    (8, "too_many_total_results"),
    (16, "cancelled"),
    (32, "no_canonical_result"),
)
WU_CANCELLED = 16
WU_TOO_MANY_ERRORS = 2

PROJECT_DIR = "/home/boincadm/projects/test"

UPPERCASE_IN = """<input_template>
    <file_info>
        <number>0</number>
    </file_info>
    <workunit>
        <file_ref>
            <file_number>0</file_number>
            <open_name>in</open_name>
            <copy_file/>
        </file_ref>
        <target_nresults>1</target_nresults>
        <min_quorum>1</min_quorum>
        <rsc_fpops_est>1e9</rsc_fpops_est>
        <rsc_fpops_bound>1e12</rsc_fpops_bound>
        <delay_bound>86400</delay_bound>
    </workunit>
</input_template>
"""

UPPERCASE_OUT = """<output_template>
    <file_info>
        <name><OUTFILE_0/></name>
        <generated_locally/>
        <upload_when_present/>
        <max_nbytes>5000000</max_nbytes>
        <url><UPLOAD_URL/></url>
    </file_info>
    <result>
        <file_ref>
            <file_name><OUTFILE_0/></file_name>
            <open_name>out</open_name>
        </file_ref>
    </result>
</output_template>
"""


@dataclass
class User:
    """A `user` row plus its `user_submit` / `user_submit_app` rights."""

    id: int
    name: str
    authenticator: str
    has_submit: bool = True  # a user_submit row exists
    submit_all: bool = True
    apps: set[str] = field(default_factory=set)  # user_submit_app rows, by app name
    quota: float = 1.0
    logical_start_time: float = 0.0


@dataclass
class App:
    """An `app` row with its default templates (None = the file is missing)."""

    id: int
    name: str
    input_template: str | None = UPPERCASE_IN
    output_template: str | None = UPPERCASE_OUT

    @property
    def n_input_files(self) -> int | None:
        """Number of `<file_info>` in the input template, None without a template."""
        if self.input_template is None:
            return None
        return len(ET.fromstring(self.input_template).findall("file_info"))

    @property
    def template_fpops_est(self) -> float:
        """`<workunit><rsc_fpops_est>` of the input template, 0 if none."""
        if self.input_template is None:
            return 0.0
        return float(ET.fromstring(self.input_template).findtext("workunit/rsc_fpops_est") or 0)

    @property
    def output_names(self) -> list[str]:
        """Logical names of the output files, in template order."""
        if self.output_template is None:
            return []
        root = ET.fromstring(self.output_template)
        return [(e.text or "").strip() for e in root.iterfind("result/file_ref/open_name")]


@dataclass
class Batch:
    """A `batch` row."""

    id: int
    user_id: int
    app_id: int
    name: str
    create_time: int
    expire_time: float = 0.0
    state: int = INIT
    njobs: int = 0
    fraction_done: float = 0.0
    nerror_jobs: int = 0
    completion_time: int = 0
    credit_canonical: float = 0.0
    logical_end_time: float = 0.0


@dataclass
class Workunit:
    """A `workunit` row (a job)."""

    id: int
    name: str
    batch_id: int
    app_id: int
    mod_time: int
    command_line: str = ""
    input_files: list[str] = field(default_factory=list)
    priority: int = 0
    app_version_num: int = 0
    params: dict[str, float] = field(default_factory=dict)
    canonical_resultid: int = 0
    canonical_credit: float = 0.0
    error_mask: int = 0
    file_delete_state: int = 0


@dataclass
class Result:
    """A `result` row (an instance) and its output files."""

    id: int
    name: str
    wu_id: int
    batch_id: int
    server_state: int = UNSENT
    outcome: int = 0
    validate_state: int = 0
    sent_time: float = 0.0
    received_time: float = 0.0
    exit_status: int = 0
    cpu_time: float = 0.0
    elapsed_time: float = 0.0
    stderr_out: str = ""
    out_phys: list[str] = field(default_factory=list)
    out_logical: list[str] = field(default_factory=list)


@dataclass
class JobFile:
    """A `job_file` row."""

    id: int
    name: str
    create_time: float
    delete_time: float


def md5_hex(data: bytes) -> str:
    """Lower-case hex MD5 of `data`."""
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def dir_hier_path(name: str, root: str, fanout: int = 1024) -> str:
    """BOINC's hashed directory path of a file name (section 3.7)."""
    h = format(int(md5_hex(name.encode())[1:8], 16) % fanout, "x")
    return f"{root}/{h}/{name}"


class BoincState:
    """All rows and files of the fake project, guarded by one lock."""

    def __init__(self, clock: Callable[[], float] | None = None, seed: int = 1) -> None:
        self.lock = threading.RLock()
        self.clock = clock or time.time
        self.rng = random.Random(seed)
        self.users: dict[int, User] = {}
        self.apps: dict[str, App] = {}
        self.batches: dict[int, Batch] = {}
        self.wus: dict[int, Workunit] = {}
        self.results: dict[int, Result] = {}
        self.job_files: dict[str, JobFile] = {}
        self.assocs: set[tuple[int, int]] = set()  # (job_file_id, batch_id)
        self.download: dict[str, bytes] = {}
        self.upload: dict[str, bytes] = {}
        self.sandbox: dict[tuple[int, str], bytes] = {}
        # Test hook: the next submit_batch's create_work fails with this output.
        self.create_work_failure: str | None = None
        # Fake-only check that an uploaded jf_<md5> has that md5 (the real server trusts it).
        self.check_jf_md5 = True
        self._ids: dict[str, int] = {}

    def next_id(self, table: str) -> int:
        """Auto-increment id for `table`."""
        self._ids[table] = self._ids.get(table, 0) + 1
        return self._ids[table]

    def now(self) -> float:
        """Current time of the fake clock."""
        return self.clock()

    # -- lookups ---------------------------------------------------------------------------

    def user_by_auth(self, auth: str) -> User | None:
        """The user with this authenticator."""
        return next((u for u in self.users.values() if u.authenticator == auth), None)

    @property
    def apps_by_id(self) -> dict[int, App]:
        """Apps keyed by id."""
        return {a.id: a for a in self.apps.values()}

    def batch_by_name(self, name: str) -> Batch | None:
        """A batch with this name (names are not unique; the first one wins)."""
        return next((b for b in self.batches.values() if b.name == name), None)

    def wu_by_name(self, name: str) -> Workunit | None:
        """The workunit with this name."""
        return next((w for w in self.wus.values() if w.name == name), None)

    def result_by_name(self, name: str) -> Result | None:
        """The result with this name."""
        return next((r for r in self.results.values() if r.name == name), None)

    def wus_of(self, batch_id: int) -> list[Workunit]:
        """Workunits of a batch, ordered by id."""
        return sorted((w for w in self.wus.values() if w.batch_id == batch_id), key=lambda w: w.id)

    def results_of(self, wu_id: int) -> list[Result]:
        """Results of a workunit, ordered by id."""
        return sorted((r for r in self.results.values() if r.wu_id == wu_id), key=lambda r: r.id)

    def job(self, name: str) -> Workunit:
        """The workunit with this name, or KeyError (test hook helper)."""
        wu = self.wu_by_name(name)
        if wu is None:
            raise KeyError(f"no job {name}")
        return wu

    # -- derived batch fields (get_batch_params, 2.15.2) -------------------------------------

    def batch_params(self, batch: Batch) -> None:
        """Recompute njobs, fraction_done, nerror_jobs, credit and lazy COMPLETE."""
        if batch.state == INIT:
            return
        wus = self.wus_of(batch.id)
        if not wus:
            batch.njobs = 0
            return
        success = sum(1 for w in wus if w.canonical_resultid)
        errors = sum(1 for w in wus if not w.canonical_resultid and w.error_mask)
        batch.credit_canonical = sum(w.canonical_credit for w in wus if w.canonical_resultid)
        batch.njobs = len(wus)
        batch.fraction_done = (success + errors) / len(wus)
        batch.nerror_jobs = errors
        if batch.state == IN_PROGRESS and success + errors == len(wus):
            batch.state = COMPLETE
            batch.completion_time = int(self.now())

    def wu_unsent(self, wu: Workunit) -> bool:
        """get_batch_params' UNSENT: no canonical, no error, no result sent or over."""
        if wu.canonical_resultid or wu.error_mask:
            return False
        return not any(r.server_state in (SRV_IN_PROGRESS, OVER) for r in self.results_of(wu.id))

    def abort_wu(self, wu: Workunit) -> None:
        """Abort a job: unsent instances become DIDNT_NEED, the WU is CANCELLED."""
        for r in self.results_of(wu.id):
            if r.server_state == UNSENT:
                r.server_state, r.outcome = OVER, DIDNT_NEED
        wu.error_mask |= WU_CANCELLED
        wu.file_delete_state = 1
        wu.mod_time = int(self.now())

    # -- job driving (scheduler, volunteers, validator) --------------------------------------

    def _open_result(self, wu: Workunit) -> Result:
        for r in self.results_of(wu.id):
            if r.server_state in (UNSENT, SRV_IN_PROGRESS):
                return r
        raise ValueError(f"job {wu.name} has no unsent or running instance")

    def start_job(self, name: str) -> Result:
        """Send the job's next instance to a volunteer (result row only, as in #1609)."""
        with self.lock:
            r = self._open_result(self.job(name))
            r.server_state, r.sent_time = SRV_IN_PROGRESS, self.now()
            return r

    def complete_job(
        self,
        name: str,
        *,
        exit_status: int = 0,
        outputs: dict[str, bytes] | None = None,
        stderr: str = "",
        cpu: float = 10.0,
        elapsed: float = 12.0,
        credit: float = 1.0,
    ) -> Result:
        """Finish the job's open instance successfully and make it canonical."""
        with self.lock:
            wu = self.job(name)
            names = self.apps_by_id[wu.app_id].output_names
            unknown = set(outputs or {}) - set(names)
            if unknown:
                raise ValueError(f"outputs not in the output template: {sorted(unknown)}")
            r = self._open_result(wu)
            now = self.now()
            r.sent_time = r.sent_time or now
            r.server_state, r.outcome, r.validate_state = OVER, SUCCESS, 1
            r.received_time, r.exit_status = now, exit_status
            r.cpu_time, r.elapsed_time, r.stderr_out = cpu, elapsed, stderr
            r.out_logical = list(names)
            r.out_phys = [
                f"{r.name}_r{self.rng.randrange(10**9, 10**10)}_{i}" for i in range(len(names))
            ]
            for phys, logical in zip(r.out_phys, names, strict=True):
                if outputs and logical in outputs:
                    self.upload[phys] = outputs[logical]
            wu.canonical_resultid, wu.canonical_credit = r.id, credit
            wu.mod_time = int(now)
            return r

    def fail_job(
        self,
        name: str,
        *,
        exit_status: int = -185,
        stderr: str = "",
        cpu: float = 1.0,
        elapsed: float = 2.0,
        retry: bool = False,
        error_mask: int = WU_TOO_MANY_ERRORS,
    ) -> Result:
        """Fail the job's open instance; without `retry` the job errors out."""
        with self.lock:
            wu = self.job(name)
            r = self._open_result(wu)
            now = self.now()
            r.sent_time = r.sent_time or now
            r.server_state, r.outcome, r.received_time = OVER, CLIENT_ERROR, now
            r.exit_status, r.stderr_out, r.cpu_time, r.elapsed_time = (
                exit_status,
                stderr,
                cpu,
                elapsed,
            )
            if retry:
                n = len(self.results_of(wu.id))
                rid = self.next_id("result")
                self.results[rid] = Result(rid, f"{wu.name}_{n}", wu.id, wu.batch_id)
            else:
                wu.error_mask |= error_mask
                wu.mod_time = int(now)
            return r

    # -- daemons and cron scripts ----------------------------------------------------------

    def run_file_deleter(self, *, inverted: bool = False) -> list[str]:
        """delete_job_files with the intended rule (3.5), or upstream's inverted test."""
        with self.lock:
            now = self.now()
            active = {b.id for b in self.batches.values() if b.state < COMPLETE}
            deleted: list[str] = []
            for jf in sorted(self.job_files.values(), key=lambda j: j.id):
                if jf.delete_time >= now:
                    continue
                in_use = any(jid == jf.id and bid in active for jid, bid in self.assocs)
                if in_use != inverted:
                    continue
                self.download.pop(jf.name, None)
                self.assocs = {a for a in self.assocs if a[0] != jf.id}
                del self.job_files[jf.name]
                deleted.append(jf.name)
            return deleted

    def expire_batches(self) -> list[int]:
        """The expire_batches cron: abort then retire every batch whose expire_time passed."""
        with self.lock:
            now = self.now()
            expired = [
                b for b in self.batches.values() if 0 < b.expire_time < now and b.state < RETIRED
            ]
            for b in expired:
                for wu in self.wus_of(b.id):
                    self.abort_wu(wu)
                b.state, b.completion_time = RETIRED, int(now)
            return [b.id for b in expired]

    def delete_output_files(self, name: str) -> list[str]:
        """The stock file_deleter removing a finished job's outputs (11.6)."""
        with self.lock:
            removed: list[str] = []
            for r in self.results_of(self.job(name).id):
                for phys in r.out_phys:
                    if self.upload.pop(phys, None) is not None:
                        removed.append(phys)
            return removed
