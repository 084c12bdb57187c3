from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="Lease")



@_attrs_define
class Lease:
    """ 
        Attributes:
            until (float):
     """

    until: float





    def to_dict(self) -> dict[str, Any]:
        until = self.until


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "until": until,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        until = d.pop("until")

        lease = cls(
            until=until,
        )

        return lease

