from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.quotas import Quotas





T = TypeVar("T", bound="UserOut")



@_attrs_define
class UserOut:
    """ 
        Attributes:
            name (str):
            admin (bool):
            disabled (bool):
            quotas (Quotas):
            has_boinc_authenticator (bool):
            created_at (float):
     """

    name: str
    admin: bool
    disabled: bool
    quotas: Quotas
    has_boinc_authenticator: bool
    created_at: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.quotas import Quotas # noqa: PLC0415
        name = self.name

        admin = self.admin

        disabled = self.disabled

        quotas = self.quotas.to_dict()

        has_boinc_authenticator = self.has_boinc_authenticator

        created_at = self.created_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
            "admin": admin,
            "disabled": disabled,
            "quotas": quotas,
            "has_boinc_authenticator": has_boinc_authenticator,
            "created_at": created_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quotas import Quotas # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        admin = d.pop("admin")

        disabled = d.pop("disabled")

        quotas = Quotas.from_dict(d.pop("quotas"))




        has_boinc_authenticator = d.pop("has_boinc_authenticator")

        created_at = d.pop("created_at")

        user_out = cls(
            name=name,
            admin=admin,
            disabled=disabled,
            quotas=quotas,
            has_boinc_authenticator=has_boinc_authenticator,
            created_at=created_at,
        )


        user_out.additional_properties = d
        return user_out

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
