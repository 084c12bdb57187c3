from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.batch_state import BatchState
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.batch_params import BatchParams
  from ..models.batch_summary_counts import BatchSummaryCounts





T = TypeVar("T", bound="BatchSummary")



@_attrs_define
class BatchSummary:
    """ 
        Attributes:
            name (str):
            app (str):
            state (BatchState): Batch states (api.md section 3).
            created_at (float):
            submitted_at (float | None):
            completed_at (float | None):
            lease_until (float | None):
            counts (BatchSummaryCounts):
            njobs (int):
            fraction_done (float):
            retired_at (float | None | Unset):
            params (BatchParams | None | Unset):
     """

    name: str
    app: str
    state: BatchState
    created_at: float
    submitted_at: float | None
    completed_at: float | None
    lease_until: float | None
    counts: BatchSummaryCounts
    njobs: int
    fraction_done: float
    retired_at: float | None | Unset = UNSET
    params: BatchParams | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.batch_params import BatchParams # noqa: PLC0415
        from ..models.batch_summary_counts import BatchSummaryCounts # noqa: PLC0415
        name = self.name

        app = self.app

        state = self.state.value

        created_at = self.created_at

        submitted_at: float | None
        submitted_at = self.submitted_at

        completed_at: float | None
        completed_at = self.completed_at

        lease_until: float | None
        lease_until = self.lease_until

        counts = self.counts.to_dict()

        njobs = self.njobs

        fraction_done = self.fraction_done

        retired_at: float | None | Unset
        if isinstance(self.retired_at, Unset):
            retired_at = UNSET
        else:
            retired_at = self.retired_at

        params: dict[str, Any] | None | Unset
        if isinstance(self.params, Unset):
            params = UNSET
        elif isinstance(self.params, BatchParams):
            params = self.params.to_dict()
        else:
            params = self.params


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
            "app": app,
            "state": state,
            "created_at": created_at,
            "submitted_at": submitted_at,
            "completed_at": completed_at,
            "lease_until": lease_until,
            "counts": counts,
            "njobs": njobs,
            "fraction_done": fraction_done,
        })
        if retired_at is not UNSET:
            field_dict["retired_at"] = retired_at
        if params is not UNSET:
            field_dict["params"] = params

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.batch_params import BatchParams # noqa: PLC0415
        from ..models.batch_summary_counts import BatchSummaryCounts # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        app = d.pop("app")

        state = BatchState(d.pop("state"))




        created_at = d.pop("created_at")

        def _parse_submitted_at(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        submitted_at = _parse_submitted_at(d.pop("submitted_at"))


        def _parse_completed_at(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        completed_at = _parse_completed_at(d.pop("completed_at"))


        def _parse_lease_until(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        lease_until = _parse_lease_until(d.pop("lease_until"))


        counts = BatchSummaryCounts.from_dict(d.pop("counts"))




        njobs = d.pop("njobs")

        fraction_done = d.pop("fraction_done")

        def _parse_retired_at(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        retired_at = _parse_retired_at(d.pop("retired_at", UNSET))


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


        batch_summary = cls(
            name=name,
            app=app,
            state=state,
            created_at=created_at,
            submitted_at=submitted_at,
            completed_at=completed_at,
            lease_until=lease_until,
            counts=counts,
            njobs=njobs,
            fraction_done=fraction_done,
            retired_at=retired_at,
            params=params,
        )


        batch_summary.additional_properties = d
        return batch_summary

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
