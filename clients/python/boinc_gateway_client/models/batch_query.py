from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="BatchQuery")



@_attrs_define
class BatchQuery:
    """ 
        Attributes:
            batches (list[str]):
            since (str | Unset):  Default: '0'.
     """

    batches: list[str]
    since: str | Unset = '0'





    def to_dict(self) -> dict[str, Any]:
        batches = self.batches



        since = self.since


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "batches": batches,
        })
        if since is not UNSET:
            field_dict["since"] = since

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        batches = cast(list[str], d.pop("batches"))


        since = d.pop("since", UNSET)

        batch_query = cls(
            batches=batches,
            since=since,
        )

        return batch_query

