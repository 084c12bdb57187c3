from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="AppOutput")



@_attrs_define
class AppOutput:
    """ 
        Attributes:
            name (str):
            required (bool | Unset):  Default: True.
     """

    name: str
    required: bool | Unset = True





    def to_dict(self) -> dict[str, Any]:
        name = self.name

        required = self.required


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if required is not UNSET:
            field_dict["required"] = required

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        required = d.pop("required", UNSET)

        app_output = cls(
            name=name,
            required=required,
        )

        return app_output

