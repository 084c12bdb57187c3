from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="Quotas")



@_attrs_define
class Quotas:
    """ 
        Attributes:
            max_active_jobs (int | None | Unset):
            max_storage_bytes (int | None | Unset):
     """

    max_active_jobs: int | None | Unset = UNSET
    max_storage_bytes: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        max_active_jobs: int | None | Unset
        if isinstance(self.max_active_jobs, Unset):
            max_active_jobs = UNSET
        else:
            max_active_jobs = self.max_active_jobs

        max_storage_bytes: int | None | Unset
        if isinstance(self.max_storage_bytes, Unset):
            max_storage_bytes = UNSET
        else:
            max_storage_bytes = self.max_storage_bytes


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if max_active_jobs is not UNSET:
            field_dict["max_active_jobs"] = max_active_jobs
        if max_storage_bytes is not UNSET:
            field_dict["max_storage_bytes"] = max_storage_bytes

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_max_active_jobs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_active_jobs = _parse_max_active_jobs(d.pop("max_active_jobs", UNSET))


        def _parse_max_storage_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_storage_bytes = _parse_max_storage_bytes(d.pop("max_storage_bytes", UNSET))


        quotas = cls(
            max_active_jobs=max_active_jobs,
            max_storage_bytes=max_storage_bytes,
        )

        return quotas

