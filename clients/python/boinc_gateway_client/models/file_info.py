from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="FileInfo")



@_attrs_define
class FileInfo:
    """ 
        Attributes:
            md5 (str):
            size (int):
            created_at (float):
            keep_until (float):
            filename (None | str | Unset):
            batches (list[str] | Unset):
     """

    md5: str
    size: int
    created_at: float
    keep_until: float
    filename: None | str | Unset = UNSET
    batches: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        md5 = self.md5

        size = self.size

        created_at = self.created_at

        keep_until = self.keep_until

        filename: None | str | Unset
        if isinstance(self.filename, Unset):
            filename = UNSET
        else:
            filename = self.filename

        batches: list[str] | Unset = UNSET
        if not isinstance(self.batches, Unset):
            batches = self.batches




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "md5": md5,
            "size": size,
            "created_at": created_at,
            "keep_until": keep_until,
        })
        if filename is not UNSET:
            field_dict["filename"] = filename
        if batches is not UNSET:
            field_dict["batches"] = batches

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        md5 = d.pop("md5")

        size = d.pop("size")

        created_at = d.pop("created_at")

        keep_until = d.pop("keep_until")

        def _parse_filename(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        filename = _parse_filename(d.pop("filename", UNSET))


        batches = cast(list[str], d.pop("batches", UNSET))


        file_info = cls(
            md5=md5,
            size=size,
            created_at=created_at,
            keep_until=keep_until,
            filename=filename,
            batches=batches,
        )


        file_info.additional_properties = d
        return file_info

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
