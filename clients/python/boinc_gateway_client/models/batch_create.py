from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.batch_params import BatchParams
  from ..models.job_spec import JobSpec





T = TypeVar("T", bound="BatchCreate")



@_attrs_define
class BatchCreate:
    """ 
        Attributes:
            name (str):
            app (str):
            jobs (list[JobSpec] | None | Unset):
            submit (bool | Unset):  Default: True.
            lease_until (float | None | Unset):
            params (BatchParams | None | Unset):
     """

    name: str
    app: str
    jobs: list[JobSpec] | None | Unset = UNSET
    submit: bool | Unset = True
    lease_until: float | None | Unset = UNSET
    params: BatchParams | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.batch_params import BatchParams # noqa: PLC0415
        from ..models.job_spec import JobSpec # noqa: PLC0415
        name = self.name

        app = self.app

        jobs: list[dict[str, Any]] | None | Unset
        if isinstance(self.jobs, Unset):
            jobs = UNSET
        elif isinstance(self.jobs, list):
            jobs = []
            for jobs_type_0_item_data in self.jobs:
                jobs_type_0_item = jobs_type_0_item_data.to_dict()
                jobs.append(jobs_type_0_item)


        else:
            jobs = self.jobs

        submit = self.submit

        lease_until: float | None | Unset
        if isinstance(self.lease_until, Unset):
            lease_until = UNSET
        else:
            lease_until = self.lease_until

        params: dict[str, Any] | None | Unset
        if isinstance(self.params, Unset):
            params = UNSET
        elif isinstance(self.params, BatchParams):
            params = self.params.to_dict()
        else:
            params = self.params


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
            "app": app,
        })
        if jobs is not UNSET:
            field_dict["jobs"] = jobs
        if submit is not UNSET:
            field_dict["submit"] = submit
        if lease_until is not UNSET:
            field_dict["lease_until"] = lease_until
        if params is not UNSET:
            field_dict["params"] = params

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.batch_params import BatchParams # noqa: PLC0415
        from ..models.job_spec import JobSpec # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        app = d.pop("app")

        def _parse_jobs(data: object) -> list[JobSpec] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                jobs_type_0 = []
                _jobs_type_0 = data
                for jobs_type_0_item_data in (_jobs_type_0):
                    jobs_type_0_item = JobSpec.from_dict(jobs_type_0_item_data)



                    jobs_type_0.append(jobs_type_0_item)

                return jobs_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[JobSpec] | None | Unset, data)

        jobs = _parse_jobs(d.pop("jobs", UNSET))


        submit = d.pop("submit", UNSET)

        def _parse_lease_until(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        lease_until = _parse_lease_until(d.pop("lease_until", UNSET))


        def _parse_params(data: object) -> BatchParams | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                params_type_0 = BatchParams.from_dict(data)



                return params_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BatchParams | None | Unset, data)

        params = _parse_params(d.pop("params", UNSET))


        batch_create = cls(
            name=name,
            app=app,
            jobs=jobs,
            submit=submit,
            lease_until=lease_until,
            params=params,
        )

        return batch_create

