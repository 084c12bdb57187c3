from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.quotas import Quotas
  from ..models.usage import Usage





T = TypeVar("T", bound="Me")



@_attrs_define
class Me:
    """ 
        Attributes:
            name (str):
            admin (bool):
            quotas (Quotas):
            usage (Usage):
     """

    name: str
    admin: bool
    quotas: Quotas
    usage: Usage
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.quotas import Quotas # noqa: PLC0415
        from ..models.usage import Usage # noqa: PLC0415
        name = self.name

        admin = self.admin

        quotas = self.quotas.to_dict()

        usage = self.usage.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
            "admin": admin,
            "quotas": quotas,
            "usage": usage,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quotas import Quotas # noqa: PLC0415
        from ..models.usage import Usage # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        admin = d.pop("admin")

        quotas = Quotas.from_dict(d.pop("quotas"))




        usage = Usage.from_dict(d.pop("usage"))




        me = cls(
            name=name,
            admin=admin,
            quotas=quotas,
            usage=usage,
        )


        me.additional_properties = d
        return me

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
