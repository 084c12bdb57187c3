from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="BatchParams")



@_attrs_define
class BatchParams:
    """ A batch's job parameters, plus what BOINC sets per batch only.

        Attributes:
            rsc_fpops_est (float | None | Unset):
            rsc_fpops_bound (float | None | Unset):
            rsc_memory_bound (float | None | Unset):
            rsc_disk_bound (float | None | Unset):
            delay_bound (float | None | Unset):
            priority (int | None | Unset):
            app_version_num (int | None | Unset): BOINC: send the jobs only with this version of the app (overrides the
                app's `boinc.app_version_num`; the local backend has no versions)
     """

    rsc_fpops_est: float | None | Unset = UNSET
    rsc_fpops_bound: float | None | Unset = UNSET
    rsc_memory_bound: float | None | Unset = UNSET
    rsc_disk_bound: float | None | Unset = UNSET
    delay_bound: float | None | Unset = UNSET
    priority: int | None | Unset = UNSET
    app_version_num: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        rsc_fpops_est: float | None | Unset
        if isinstance(self.rsc_fpops_est, Unset):
            rsc_fpops_est = UNSET
        else:
            rsc_fpops_est = self.rsc_fpops_est

        rsc_fpops_bound: float | None | Unset
        if isinstance(self.rsc_fpops_bound, Unset):
            rsc_fpops_bound = UNSET
        else:
            rsc_fpops_bound = self.rsc_fpops_bound

        rsc_memory_bound: float | None | Unset
        if isinstance(self.rsc_memory_bound, Unset):
            rsc_memory_bound = UNSET
        else:
            rsc_memory_bound = self.rsc_memory_bound

        rsc_disk_bound: float | None | Unset
        if isinstance(self.rsc_disk_bound, Unset):
            rsc_disk_bound = UNSET
        else:
            rsc_disk_bound = self.rsc_disk_bound

        delay_bound: float | None | Unset
        if isinstance(self.delay_bound, Unset):
            delay_bound = UNSET
        else:
            delay_bound = self.delay_bound

        priority: int | None | Unset
        if isinstance(self.priority, Unset):
            priority = UNSET
        else:
            priority = self.priority

        app_version_num: int | None | Unset
        if isinstance(self.app_version_num, Unset):
            app_version_num = UNSET
        else:
            app_version_num = self.app_version_num


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if rsc_fpops_est is not UNSET:
            field_dict["rsc_fpops_est"] = rsc_fpops_est
        if rsc_fpops_bound is not UNSET:
            field_dict["rsc_fpops_bound"] = rsc_fpops_bound
        if rsc_memory_bound is not UNSET:
            field_dict["rsc_memory_bound"] = rsc_memory_bound
        if rsc_disk_bound is not UNSET:
            field_dict["rsc_disk_bound"] = rsc_disk_bound
        if delay_bound is not UNSET:
            field_dict["delay_bound"] = delay_bound
        if priority is not UNSET:
            field_dict["priority"] = priority
        if app_version_num is not UNSET:
            field_dict["app_version_num"] = app_version_num

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_rsc_fpops_est(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        rsc_fpops_est = _parse_rsc_fpops_est(d.pop("rsc_fpops_est", UNSET))


        def _parse_rsc_fpops_bound(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        rsc_fpops_bound = _parse_rsc_fpops_bound(d.pop("rsc_fpops_bound", UNSET))


        def _parse_rsc_memory_bound(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        rsc_memory_bound = _parse_rsc_memory_bound(d.pop("rsc_memory_bound", UNSET))


        def _parse_rsc_disk_bound(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        rsc_disk_bound = _parse_rsc_disk_bound(d.pop("rsc_disk_bound", UNSET))


        def _parse_delay_bound(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        delay_bound = _parse_delay_bound(d.pop("delay_bound", UNSET))


        def _parse_priority(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        priority = _parse_priority(d.pop("priority", UNSET))


        def _parse_app_version_num(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        app_version_num = _parse_app_version_num(d.pop("app_version_num", UNSET))


        batch_params = cls(
            rsc_fpops_est=rsc_fpops_est,
            rsc_fpops_bound=rsc_fpops_bound,
            rsc_memory_bound=rsc_memory_bound,
            rsc_disk_bound=rsc_disk_bound,
            delay_bound=delay_bound,
            priority=priority,
            app_version_num=app_version_num,
        )

        return batch_params

