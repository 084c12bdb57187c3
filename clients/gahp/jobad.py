"""What a UNICORE-style job ad asks the gateway for, checked before anything is created.

The gridmanager sends the whole job ad (gahp.md 5.1), so an ad carries HTCondor's own
bookkeeping besides what concerns the gateway. Attributes fall in three groups:

* honoured: `Cmd` (the app; a path's last component), `Arguments` (new syntax) or
  `Args` (old syntax), `Environment` / `Env`, `Iwd`, `In`, `Out`, `Err`,
  `TransferInput`, `TransferOutput`, `TransferOutputRemaps`, the six BOINC job
  parameters, `BoincBatch` (join that batch) and `BoincIgnoreAttributes`;
* known HTCondor job attributes, which do not concern the gateway and are ignored;
* anything else, which is an error unless `BoincIgnoreAttributes` (a comma or space
  separated list) names it: a misspelt or custom attribute never silently does nothing.

Local paths follow HTCondor: relative to `Iwd`. Inputs are `TransferInput` (split on
commas and white space) plus `In` unless it is `/dev/null`, bound to the app's inputs
by position as in BOINC_SUBMIT. Everything the shim writes (outputs, `Out`, `Err`) must
lie inside `Iwd`.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from dataclasses import field as dc_field

from clients.gahp.classad import ClassAd, Value
from clients.gahp.submit import PARAM_FIELDS, app_version

BATCH_ATTRIBUTE = "BoincBatch"
IGNORE_ATTRIBUTE = "BoincIgnoreAttributes"
HONOURED = frozenset(
    name.lower()
    for name in (
        "Cmd Args Arguments Env Environment Iwd In Out Err TransferInput TransferOutput"
        f" TransferOutputRemaps {BATCH_ATTRIBUTE} {IGNORE_ATTRIBUTE} {' '.join(PARAM_FIELDS)}"
    ).split()
)
# HTCondor's job attributes (condor_submit, schedd, gridmanager, and what the status ads
# of this shim add to a job): present in a real job ad, of no concern to the gateway.
HTCONDOR_ATTRIBUTES = frozenset(
    name.lower()
    for name in """
    Absent AccountingGroup AcctGroup AcctGroupUser ActivationDuration
    ActivationExecutionDuration ActivationSetupDuration ActivationTeardownDuration
    AllowedExecuteDuration AllowedJobDuration AllRemoteHosts AutoClusterAttrs AutoClusterId
    BatchExtraSubmitArgs BatchProject BatchQueue BatchRuntime BlockReadKbytes BlockReads
    BlockWriteKbytes BlockWrites BoincAuthenticatorFile BufferBlockSize BufferSize
    BytesRecvd BytesSent CkptArch CkptOpSys ClusterId CommittedSlotTime
    CommittedSuspensionTime CommittedTime CompletionDate ConcurrencyLimits CondorPlatform
    CondorVersion ContainerImage CoreSize CpusProvisioned CpusUsage CumulativeRemoteSysCpu
    CumulativeRemoteUserCpu CumulativeSlotTime CumulativeSuspensionTime
    CumulativeTransferTime CurrentHosts CurrentTime DAGManJobId DAGManNodesLog
    DAGManNodesMask DAGNodeName DAGParentNodeNames DeferralPrepTime DeferralTime
    DeferralWindow DelegateJobGSICredentialsLifetime DiskProvisioned DiskUsage DiskUsage_RAW
    DockerImage EncryptExecuteDirectory EnteredCurrentStatus ErrMessage ExecutableSize
    ExecutableSize_RAW ExitBySignal ExitCode ExitReason ExitSignal ExitStatus
    FileSystemDomain FirstJobMatchDate GetEnv GlobalJobId GridJobId GridJobStatus
    GridResource GridResourceUnavailableTime HoldKillSig HoldReason HoldReasonCode
    HoldReasonSubCode ImageSize ImageSize_RAW InitialWaitDuration JobAdInformationAttrs
    JobBatchId JobBatchName JobCurrentFinishTransferInputDate
    JobCurrentFinishTransferOutputDate JobCurrentStartDate JobCurrentStartExecutingDate
    JobCurrentStartTransferInputDate JobCurrentStartTransferOutputDate JobDescription
    JobLastStartDate JobLeaseDuration JobLeaseExpiration JobMaxVacateTime JobNotification
    JobPrio JobRunCount JobStartDate JobStatus JobStatusOnRelease JobSubmitMethod
    JobUniverse KeepClaimIdle KeystoreAlias KeystoreFile KeystorePassphraseFile KillSig
    KillSigTimeout LastHoldReason LastHoldReasonCode LastHoldReasonSubCode
    LastJobLeaseRenewal LastJobStatus LastMatchTime LastRejMatchReason LastRejMatchTime
    LastRemoteHost LastRemotePool LastRemoteStatusUpdate LastSuspensionTime LastVacateTime
    LeaveJobInQueue LocalSysCpu LocalUserCpu MachineAttrCpus0 MachineAttrSlotWeight0 Managed
    ManagedManager MaxHosts MaxJobRetirementTime MaxTransferInputMB MaxTransferOutputMB
    MemoryProvisioned MemoryUsage MinHosts MyType NiceUser Nonessential NotifyUser NTDomain
    NumCkpts NumCkpts_RAW NumHolds NumHoldsByReason NumJobCompletions NumJobMatches
    NumJobReconnects NumJobStarts NumPids NumRestarts NumShadowExceptions NumShadowStarts
    NumSystemHolds OnExitHold OnExitHoldReason OnExitHoldSubCode OnExitRemove OrigMaxHosts
    OsUser Owner PeriodicHold PeriodicHoldReason PeriodicHoldSubCode PeriodicRelease
    PeriodicRemove PreserveRelativeExecutable ProcId ProportionalSetSizeKb QDate Rank
    RecentBlockReadKbytes RecentBlockReads RecentBlockWriteKbytes RecentBlockWrites
    RecentStatsLifetimeStarter ReleaseReason RemoteHost RemotePool RemoteSlotID RemoteSysCpu
    RemoteUserCpu RemoteWallClockTime RemoveReason RequestCpus RequestDisk RequestGPUs
    RequestMemory Requirements ResidentSetSize ResidentSetSize_RAW RootDir ScheddBday
    ServerTime ShadowBday ShouldTransferFiles StageInFinish StageInStart StartdIpAddr
    StartdPrincipal StatsLifetimeStarter StreamErr StreamOut SUBMIT_Cmd SUBMIT_Err SUBMIT_In
    SUBMIT_Iwd SUBMIT_Out SUBMIT_TransferOutputRemaps SUBMIT_x509userproxy SubmitEventNotes
    SubmitterGlobalJobId SuccessCheckpointExitCode TargetType TerminationPending
    TotalSubmitProcs TotalSuspensions TransferErr TransferExecutable TransferIn
    TransferInFinished TransferInputSizeMB TransferInStarted TransferOut TransferOutFinished
    TransferOutStarted TransferQueued TransferringInput TransferringOutput UnicoreJobId
    UnicoreUSite UnicoreVSite User UserLog UserLogUseXML WantCheckpoint WantClaiming
    WantGracefulRemoval WantRemoteIO WantRemoteSyscalls WhenToTransferOutput x509UserProxy
    x509UserProxyEmail x509UserProxyExpiration x509UserProxyFirstFQAN x509UserProxyFQAN
    x509userproxysubject x509UserProxyVOName
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
APP_NAME = re.compile(r"[A-Za-z0-9_.\-#:@+=]{1,64}")
BATCH_NAME = re.compile(r"[A-Za-z0-9_.\-#:@+=]{1,150}")
OUTPUT_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
MAX_ARGS, MAX_ARG_CHARS = 1000, 4096  # the gateway's limits on a job's arguments
_LIST_SPLIT = re.compile(r"[,\s]+")
_NULL_FILE = ("", "/dev/null")


class JobAdError(Exception):
    """The job ad cannot be run as asked; the message names the attribute."""


@dataclass(frozen=True)
class OutputPlan:
    """Where a finished job's files go; every destination is relative to, and inside, iwd."""

    iwd: str
    outputs: tuple[str, ...] | None  # app outputs to fetch; None: every one it produced
    remaps: tuple[tuple[str, str], ...]  # (output, destination) where not its own name
    stdout: str | None
    stderr: str | None

    def destination(self, output: str) -> str:
        """The path, relative to iwd, an output is written to."""
        return dict(self.remaps).get(output, output)


@dataclass(frozen=True)
class JobRequest:
    """A checked job ad: what to run, with which files, and where results go."""

    app: str
    args: tuple[str, ...]
    inputs: tuple[str, ...]  # absolute local paths, in the order of the app's inputs
    plan: OutputPlan
    params: dict[str, float]
    batch: str | None  # join this batch; None: a batch of its own
    proc: str | None  # "<ClusterId>.<ProcId>" when the ad has them
    env: dict[str, str] = dc_field(default_factory=dict)  # on top of the job's clean environment


def read_job(ad: ClassAd) -> JobRequest:
    """Check a job ad and say what it asks for; JobAdError when it cannot be honoured."""
    _check_names(ad)
    cmd = _string(ad, "Cmd")
    if cmd is None or not cmd.strip():
        raise JobAdError("the job ad has no Cmd (the name of the app to run)")
    app = os.path.basename(cmd.strip().rstrip("/"))
    if not APP_NAME.fullmatch(app) or app in (".", ".."):
        raise JobAdError(f"Cmd {cmd[:80]!r} does not name an app")
    iwd = _string(ad, "Iwd")
    if not iwd or not os.path.isabs(iwd):
        raise JobAdError("Iwd must be an absolute directory path")
    iwd = os.path.normpath(iwd)
    env = read_environment(ad)
    batch = _string(ad, BATCH_ATTRIBUTE)
    if batch is not None and not BATCH_NAME.fullmatch(batch):
        raise JobAdError(f"{BATCH_ATTRIBUTE} {batch[:80]!r} is not a batch name")
    cluster, proc = _count(ad.get("ClusterId")), _count(ad.get("ProcId"))
    proc_id = f"{cluster}.{proc}" if cluster is not None and proc is not None else None
    return JobRequest(
        app=app,
        args=read_arguments(ad),
        inputs=_inputs(ad, iwd),
        plan=_plan(ad, iwd),
        params=_params(ad),
        batch=batch,
        proc=proc_id,
        env=env,
    )


def _count(value: Value | None) -> int | None:
    """A non-negative integer attribute (ClusterId, ProcId), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _check_names(ad: ClassAd) -> None:
    ignored = {n.lower() for n in _split_list(_string(ad, IGNORE_ATTRIBUTE) or "")}
    unknown = [
        name
        for name in ad
        if name.lower() not in HONOURED
        and name.lower() not in HTCONDOR_ATTRIBUTES
        and name.lower() not in ignored
    ]
    if unknown:
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        shown = ", ".join(unknown[:5]) + more
        raise JobAdError(
            f"unknown attribute {shown}: the gateway does not honour it"
            f" (list it in {IGNORE_ATTRIBUTE} to have it ignored)"
        )


def _string(ad: ClassAd, name: str) -> str | None:
    value = ad.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise JobAdError(f"{name} must be a string")
    return value


def _split_list(text: str) -> list[str]:
    return [item for item in _LIST_SPLIT.split(text) if item]


# ----- arguments and environment -----


def split_v1(text: str) -> list[str]:
    """Old-syntax arguments (`Args`): split on white space, no quoting at all."""
    return text.split()


def split_v2(text: str, what: str = "Arguments") -> list[str]:
    """New syntax: white space separates, '...' groups, '' inside quotes is one quote."""
    args: list[str] = []
    current: str | None = None
    quoted = False
    pos = 0
    while pos < len(text):  # each turn consumes one or two characters
        char = text[pos]
        if char == "'":
            if quoted and text[pos + 1 : pos + 2] == "'":
                current = (current or "") + "'"
                pos += 1
            else:
                quoted = not quoted
                current = current or ""
        elif char.isspace() and not quoted:
            if current is not None:
                args.append(current)
            current = None
        else:
            current = (current or "") + char
        pos += 1
    if quoted:
        raise JobAdError(f"{what} has an unterminated single quote")
    if current is not None:
        args.append(current)
    return args


def read_arguments(ad: ClassAd) -> tuple[str, ...]:
    """`Arguments` (new syntax) wins over `Args` (old syntax), as in HTCondor."""
    v2, v1 = _string(ad, "Arguments"), _string(ad, "Args")
    args = split_v2(v2) if v2 is not None else split_v1(v1 or "")
    if len(args) > MAX_ARGS:
        raise JobAdError(f"{len(args)} arguments; the gateway takes at most {MAX_ARGS}")
    long = next((a for a in args if len(a) > MAX_ARG_CHARS), None)
    if long is not None:
        raise JobAdError(f"an argument is longer than {MAX_ARG_CHARS} characters")
    return tuple(args)


def read_environment(ad: ClassAd) -> dict[str, str]:
    """`Environment` (new syntax) wins over `Env` (old, `;`-separated), as in HTCondor."""
    v2, v1 = _string(ad, "Environment"), _string(ad, "Env")
    if v2 is not None:
        entries, what = split_v2(v2, "Environment"), "Environment"
    else:
        entries, what = [e for e in (v1 or "").split(";") if e.strip()], "Env"
    env: dict[str, str] = {}
    for entry in entries:
        name, sep, value = entry.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name.strip()):
            raise JobAdError(f"{what} entry {entry[:60]!r} is not NAME=value")
        env[name.strip()] = value
    return env


# ----- files -----


def inside(iwd: str, path: str, what: str) -> str:
    """Path relative to iwd of a place the shim writes; it must lie inside iwd."""
    full = os.path.normpath(os.path.join(iwd, path))
    if not full.startswith(iwd.rstrip("/") + "/"):
        raise JobAdError(f"{what} {path[:120]!r} is outside Iwd")
    return os.path.relpath(full, iwd)


def _inputs(ad: ClassAd, iwd: str) -> tuple[str, ...]:
    entries = _split_list(_string(ad, "TransferInput") or "")
    stdin = (_string(ad, "In") or "").strip()
    if stdin not in _NULL_FILE and stdin not in entries:
        entries.append(stdin)
    return tuple(os.path.normpath(os.path.join(iwd, entry)) for entry in entries)


def _plan(ad: ClassAd, iwd: str) -> OutputPlan:
    listed = _string(ad, "TransferOutput")
    outputs = None if listed is None else tuple(_split_list(listed))
    for name in outputs or ():
        if not OUTPUT_NAME.fullmatch(name) or name in (".", ".."):
            raise JobAdError(f"TransferOutput entry {name[:80]!r} is not an output name")
    remaps: list[tuple[str, str]] = []
    for rule in (_string(ad, "TransferOutputRemaps") or "").split(";"):
        if not rule.strip():
            continue
        src, sep, dst = rule.partition("=")
        if not sep or "\\" in rule or not src.strip() or not dst.strip():
            raise JobAdError(f"TransferOutputRemaps rule {rule[:80]!r} is not name=path")
        remaps.append((src.strip(), inside(iwd, dst.strip(), "remapped output")))
    return OutputPlan(
        iwd=iwd,
        outputs=outputs,
        remaps=tuple(remaps),
        stdout=_log_path(ad, "Out", iwd),
        stderr=_log_path(ad, "Err", iwd),
    )


def _log_path(ad: ClassAd, name: str, iwd: str) -> str | None:
    path = (_string(ad, name) or "").strip()
    return None if path in _NULL_FILE else inside(iwd, path, name)


# ----- job parameters -----


def _params(ad: ClassAd) -> dict[str, float]:
    """The BOINC job parameters; numbers or numeric strings (the gridmanager's form)."""
    params: dict[str, float] = {}
    for field in PARAM_FIELDS:
        raw = ad.get(field)
        if raw is None or (isinstance(raw, str) and raw.strip() in ("", "NULL")):
            continue
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            raise JobAdError(f"{field} must be a number")
        try:
            value = float(raw)
        except ValueError:
            raise JobAdError(f"{field} {raw!r} is not a number") from None
        if field == "app_version_num":
            version = app_version(value)
            if version is None:
                raise JobAdError(f"app_version_num {raw!r} is not a version number")
            if version:  # 0: any version
                params[field] = version
            continue
        if not math.isfinite(value) or value <= 0:
            raise JobAdError(f"{field} must be a positive number")
        params[field] = value
    return params


def grid_contact(ad: ClassAd) -> str | None:
    """The job contact of an ad being recovered: the last word of GridJobId."""
    grid_job_id = _string(ad, "GridJobId")
    words = (grid_job_id or "").split()
    return words[-1] if words else None
