from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="FileQuery")



@_attrs_define
class FileQuery:
    """ 
        Attributes:
            md5s (list[str]):
            batch (None | str | Unset):
     """

    md5s: list[str]
    batch: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        md5s = self.md5s



        batch: None | str | Unset
        if isinstance(self.batch, Unset):
            batch = UNSET
        else:
            batch = self.batch


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "md5s": md5s,
        })
        if batch is not UNSET:
            field_dict["batch"] = batch

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        md5s = cast(list[str], d.pop("md5s"))


        def _parse_batch(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        batch = _parse_batch(d.pop("batch", UNSET))


        file_query = cls(
            md5s=md5s,
            batch=batch,
        )

        return file_query

