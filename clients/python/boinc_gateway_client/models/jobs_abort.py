from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="JobsAbort")



@_attrs_define
class JobsAbort:
    """ 
        Attributes:
            jobs (list[str]):
     """

    jobs: list[str]





    def to_dict(self) -> dict[str, Any]:
        jobs = self.jobs




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "jobs": jobs,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        jobs = cast(list[str], d.pop("jobs"))


        jobs_abort = cls(
            jobs=jobs,
        )

        return jobs_abort

