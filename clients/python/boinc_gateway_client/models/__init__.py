""" Contains all the data models used in inputs/outputs """

from .abort_result import AbortResult
from .app_in import AppIn
from .app_out import AppOut
from .app_output import AppOutput
from .batch_create import BatchCreate
from .batch_params import BatchParams
from .batch_query import BatchQuery
from .batch_query_group import BatchQueryGroup
from .batch_query_result import BatchQueryResult
from .batch_state import BatchState
from .batch_summary import BatchSummary
from .batch_summary_counts import BatchSummaryCounts
from .body_upload_files import BodyUploadFiles
from .boinc_spec import BoincSpec
from .file_info import FileInfo
from .file_query import FileQuery
from .file_query_result import FileQueryResult
from .file_ref import FileRef
from .health import Health
from .health_checks import HealthChecks
from .health_status import HealthStatus
from .http_validation_error import HTTPValidationError
from .input_spec import InputSpec
from .job_list_item import JobListItem
from .job_out import JobOut
from .job_out_env_type_0 import JobOutEnvType0
from .job_params import JobParams
from .job_spec import JobSpec
from .job_spec_env_type_0 import JobSpecEnvType0
from .job_state import JobState
from .job_state_item import JobStateItem
from .jobs_abort import JobsAbort
from .jobs_add import JobsAdd
from .jobs_added import JobsAdded
from .lease import Lease
from .local_spec import LocalSpec
from .me import Me
from .page_batch_summary import PageBatchSummary
from .page_file_info import PageFileInfo
from .page_job_list_item import PageJobListItem
from .problem import Problem
from .quotas import Quotas
from .uploaded_file import UploadedFile
from .usage import Usage
from .user_create import UserCreate
from .user_out import UserOut
from .user_patch import UserPatch
from .user_token import UserToken
from .validation_error import ValidationError
from .validation_error_context import ValidationErrorContext

__all__ = (
    "AbortResult",
    "AppIn",
    "AppOut",
    "AppOutput",
    "BatchCreate",
    "BatchParams",
    "BatchQuery",
    "BatchQueryGroup",
    "BatchQueryResult",
    "BatchState",
    "BatchSummary",
    "BatchSummaryCounts",
    "BodyUploadFiles",
    "BoincSpec",
    "FileInfo",
    "FileQuery",
    "FileQueryResult",
    "FileRef",
    "Health",
    "HealthChecks",
    "HealthStatus",
    "HTTPValidationError",
    "InputSpec",
    "JobListItem",
    "JobOut",
    "JobOutEnvType0",
    "JobParams",
    "JobsAbort",
    "JobsAdd",
    "JobsAdded",
    "JobSpec",
    "JobSpecEnvType0",
    "JobState",
    "JobStateItem",
    "Lease",
    "LocalSpec",
    "Me",
    "PageBatchSummary",
    "PageFileInfo",
    "PageJobListItem",
    "Problem",
    "Quotas",
    "UploadedFile",
    "Usage",
    "UserCreate",
    "UserOut",
    "UserPatch",
    "UserToken",
    "ValidationError",
    "ValidationErrorContext",
)
