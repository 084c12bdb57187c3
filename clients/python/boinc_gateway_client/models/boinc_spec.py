from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="BoincSpec")



@_attrs_define
class BoincSpec:
    """ 
        Attributes:
            app_name (str):
            app_version_num (int | None | Unset):
     """

    app_name: str
    app_version_num: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        app_name = self.app_name

        app_version_num: int | None | Unset
        if isinstance(self.app_version_num, Unset):
            app_version_num = UNSET
        else:
            app_version_num = self.app_version_num


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "app_name": app_name,
        })
        if app_version_num is not UNSET:
            field_dict["app_version_num"] = app_version_num

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        app_name = d.pop("app_name")

        def _parse_app_version_num(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        app_version_num = _parse_app_version_num(d.pop("app_version_num", UNSET))


        boinc_spec = cls(
            app_name=app_name,
            app_version_num=app_version_num,
        )

        return boinc_spec

