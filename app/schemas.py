"""Request and response models of the REST API (the OpenAPI document is built from these)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from app.states import BatchState, JobState

NAME_RE = re.compile(r"^[A-Za-z0-9_.\-#:@+=]{1,191}$")
# Apps are stored in a 64-character column (and BOINC app names are short).
APP_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-#:@+=]{1,64}$")
FILE_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
MD5_RE = re.compile(r"^[0-9a-f]{32}$")
USER_RE = re.compile(r"^[A-Za-z0-9_.\-@]{1,64}$")


def _check(pattern: re.Pattern[str], what: str) -> Any:
    """Validate against ``pattern`` (also published in the schema) and refuse ``.``/``..``."""

    def check(value: str) -> str:
        if not pattern.fullmatch(value) or value in {".", ".."}:
            raise ValueError(f"invalid {what} {value[:200]!r}")
        return value

    return AfterValidator(check)


Name = Annotated[str, _check(NAME_RE, "name"), Field(examples=["batch-1"])]
AppName = Annotated[str, _check(APP_NAME_RE, "app name"), Field(examples=["uppercase"])]
FileName = Annotated[str, _check(FILE_NAME_RE, "file name"), Field(examples=["in"])]
Md5 = Annotated[str, _check(MD5_RE, "md5"), Field(examples=["5d41402abc4b2a76b9719d911017c592"])]
UserName = Annotated[str, _check(USER_RE, "user name")]


class Strict(BaseModel):
    """Rejects unknown fields so typos are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    """One page of a list; pass ``next_cursor`` back as ``cursor`` for the next."""

    items: list[T]
    next_cursor: str | None


# ---- users -------------------------------------------------------------------------------


class Quotas(Strict):
    max_active_jobs: int | None = Field(default=None, ge=0)
    max_storage_bytes: int | None = Field(default=None, ge=0)


class Usage(BaseModel):
    active_jobs: int
    stored_bytes: int


class Me(BaseModel):
    name: str
    admin: bool
    quotas: Quotas
    usage: Usage


class UserCreate(Strict):
    name: UserName
    admin: bool = False
    quotas: Quotas | None = None
    boinc_authenticator: str | None = Field(default=None, max_length=254)


class UserPatch(Strict):
    admin: bool | None = None
    quotas: Quotas | None = None
    boinc_authenticator: str | None = Field(default=None, max_length=254)
    disabled: bool | None = None


class UserOut(BaseModel):
    name: str
    admin: bool
    disabled: bool
    quotas: Quotas
    has_boinc_authenticator: bool
    created_at: float


class UserToken(BaseModel):
    name: str
    token: str


# ---- apps --------------------------------------------------------------------------------


class AppOutput(Strict):
    name: FileName
    required: bool = True


class LocalSpec(Strict):
    command: list[str] = Field(min_length=1)
    wall_seconds: float | None = Field(default=None, gt=0)


class BoincSpec(Strict):
    app_name: str = Field(min_length=1, max_length=254)
    app_version_num: int | None = None


class JobParams(Strict):
    """BOINC job parameters (``priority`` is a batch/job priority, higher runs first)."""

    rsc_fpops_est: float | None = Field(default=None, gt=0)
    rsc_fpops_bound: float | None = Field(default=None, gt=0)
    rsc_memory_bound: float | None = Field(default=None, gt=0)
    rsc_disk_bound: float | None = Field(default=None, gt=0)
    delay_bound: float | None = Field(default=None, gt=0)
    priority: int | None = None


class BatchParams(JobParams):
    """A batch's job parameters, plus what BOINC sets per batch only."""

    app_version_num: int | None = Field(
        default=None,
        ge=1,
        description="BOINC: send the jobs only with this version of the app (overrides the "
        "app's `boinc.app_version_num`; the local backend has no versions)",
    )


class AppIn(Strict):
    name: AppName
    description: str = Field(default="", max_length=4000)
    inputs: list[FileName] = Field(default_factory=list, max_length=64)
    outputs: list[FileName | AppOutput] = Field(default_factory=list, max_length=64)
    allowed_users: list[UserName] | None = None
    local: LocalSpec | None = None
    boinc: BoincSpec | None = None
    params: JobParams = Field(default_factory=JobParams)

    @model_validator(mode="after")
    def _unique_names(self) -> AppIn:
        names = [*self.inputs, *(o if isinstance(o, str) else o.name for o in self.outputs)]
        if len(set(self.inputs)) != len(self.inputs):
            raise ValueError("input names must be unique")
        outs = names[len(self.inputs) :]
        if len(set(outs)) != len(outs):
            raise ValueError("output names must be unique")
        return self

    def output_specs(self) -> list[AppOutput]:
        """Outputs normalised to ``{name, required}``."""
        return [AppOutput(name=o) if isinstance(o, str) else o for o in self.outputs]


class AppOut(BaseModel):
    name: str
    description: str
    inputs: list[str]
    outputs: list[AppOutput]
    allowed_users: list[str] | None = None
    local: LocalSpec | None = None
    boinc: BoincSpec | None = None
    params: JobParams
    created_at: float


# ---- files -------------------------------------------------------------------------------


class FileInfo(BaseModel):
    md5: str
    size: int
    filename: str | None = None
    created_at: float
    keep_until: float
    batches: list[str] = Field(default_factory=list)


class UploadedFile(BaseModel):
    md5: str
    size: int
    filename: str | None = None
    created: bool


class FileQuery(Strict):
    md5s: list[Md5] = Field(max_length=10_000)
    batch: Name | None = None


class FileQueryResult(BaseModel):
    missing: list[str]


# ---- batches and jobs --------------------------------------------------------------------


class InputSpec(Strict):
    """Binds one app input: by ``md5``, by inline ``content``, or by ``url`` (+ md5, size)."""

    name: FileName
    md5: Md5 | None = None
    content: str | None = None
    url: str | None = Field(default=None, max_length=2000, pattern=r"^https?://")
    size: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one_source(self) -> InputSpec:
        if self.content is not None:
            if self.md5 is not None or self.url is not None:
                raise ValueError(f"input {self.name}: give content alone")
        elif self.url is not None:
            if self.md5 is None or self.size is None:
                raise ValueError(f"input {self.name}: a url input needs md5 and size")
        elif self.md5 is None:
            raise ValueError(f"input {self.name}: give md5, content or url")
        return self


ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
EnvName = Annotated[
    str,
    _check(ENV_NAME_RE, "environment variable name"),
    Field(json_schema_extra={"pattern": ENV_NAME_RE.pattern}),
]
EnvValue = Annotated[str, Field(max_length=4096, pattern=r"^[^\x00]*$")]


class JobSpec(Strict):
    name: Name
    args: list[Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=list, max_length=1000
    )
    inputs: list[InputSpec] = Field(default_factory=list, max_length=64)
    outputs: list[FileName] | None = None
    params: JobParams | None = None
    env: dict[EnvName, EnvValue] | None = Field(
        default=None,
        max_length=64,
        description="Environment variables for the job, on top of the clean environment "
        "the local backend gives every job (the boinc backend refuses them).",
    )


class BatchCreate(Strict):
    name: Name
    app: Name
    jobs: list[JobSpec] | None = None
    submit: bool = True
    lease_until: float | None = None
    params: BatchParams | None = None


class JobsAdd(Strict):
    jobs: list[JobSpec] = Field(min_length=1)


class Lease(Strict):
    until: float


class BatchSummary(BaseModel):
    name: str
    app: str
    state: BatchState
    created_at: float
    submitted_at: float | None
    completed_at: float | None
    retired_at: float | None = None
    lease_until: float | None
    counts: dict[str, int]
    njobs: int
    fraction_done: float
    params: BatchParams | None = None


class JobsAdded(BaseModel):
    batch: str
    added: int
    njobs: int


class JobStateItem(BaseModel):
    name: str
    state: JobState


class BatchQuery(Strict):
    batches: list[Name] = Field(max_length=10_000)
    since: str = "0"


class BatchQueryGroup(BaseModel):
    name: str
    jobs: list[JobStateItem]


class BatchQueryResult(BaseModel):
    cursor: str
    batches: list[BatchQueryGroup]


class JobListItem(BaseModel):
    name: str
    state: JobState
    exit_code: int | None = None
    error: str | None = None
    change: str


class FileRef(BaseModel):
    name: str
    md5: str | None
    size: int | None
    url: str | None = None


class JobOut(BaseModel):
    name: str
    state: JobState
    batch: str
    app: str
    args: list[str]
    env: dict[str, str] | None = None
    inputs: list[FileRef]
    outputs_wanted: list[str] = Field(
        description="the output names the job asked for (its spec's `outputs`, or all of "
        "the app's); `outputs` lists those it produced",
    )
    outputs: list[FileRef]
    exit_code: int | None
    wall_seconds: float | None
    cpu_seconds: float | None
    error: str | None
    attempts: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    change: str


class JobsAbort(Strict):
    jobs: list[Name] = Field(min_length=1, max_length=10_000)


class AbortResult(BaseModel):
    aborted: int


class Health(BaseModel):
    status: Literal["ok", "unavailable"]
    checks: dict[str, str] = Field(default_factory=dict)
