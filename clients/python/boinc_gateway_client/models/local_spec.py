from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="LocalSpec")



@_attrs_define
class LocalSpec:
    """ 
        Attributes:
            command (list[str]):
            wall_seconds (float | None | Unset):
     """

    command: list[str]
    wall_seconds: float | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        command = self.command



        wall_seconds: float | None | Unset
        if isinstance(self.wall_seconds, Unset):
            wall_seconds = UNSET
        else:
            wall_seconds = self.wall_seconds


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "command": command,
        })
        if wall_seconds is not UNSET:
            field_dict["wall_seconds"] = wall_seconds

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        command = cast(list[str], d.pop("command"))


        def _parse_wall_seconds(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        wall_seconds = _parse_wall_seconds(d.pop("wall_seconds", UNSET))


        local_spec = cls(
            command=command,
            wall_seconds=wall_seconds,
        )

        return local_spec

