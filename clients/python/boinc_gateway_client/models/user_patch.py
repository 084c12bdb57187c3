from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.quotas import Quotas





T = TypeVar("T", bound="UserPatch")



@_attrs_define
class UserPatch:
    """ 
        Attributes:
            admin (bool | None | Unset):
            quotas (None | Quotas | Unset):
            boinc_authenticator (None | str | Unset):
            disabled (bool | None | Unset):
     """

    admin: bool | None | Unset = UNSET
    quotas: None | Quotas | Unset = UNSET
    boinc_authenticator: None | str | Unset = UNSET
    disabled: bool | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.quotas import Quotas # noqa: PLC0415
        admin: bool | None | Unset
        if isinstance(self.admin, Unset):
            admin = UNSET
        else:
            admin = self.admin

        quotas: dict[str, Any] | None | Unset
        if isinstance(self.quotas, Unset):
            quotas = UNSET
        elif isinstance(self.quotas, Quotas):
            quotas = self.quotas.to_dict()
        else:
            quotas = self.quotas

        boinc_authenticator: None | str | Unset
        if isinstance(self.boinc_authenticator, Unset):
            boinc_authenticator = UNSET
        else:
            boinc_authenticator = self.boinc_authenticator

        disabled: bool | None | Unset
        if isinstance(self.disabled, Unset):
            disabled = UNSET
        else:
            disabled = self.disabled


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if admin is not UNSET:
            field_dict["admin"] = admin
        if quotas is not UNSET:
            field_dict["quotas"] = quotas
        if boinc_authenticator is not UNSET:
            field_dict["boinc_authenticator"] = boinc_authenticator
        if disabled is not UNSET:
            field_dict["disabled"] = disabled

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quotas import Quotas # noqa: PLC0415
        d = dict(src_dict)
        def _parse_admin(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        admin = _parse_admin(d.pop("admin", UNSET))


        def _parse_quotas(data: object) -> None | Quotas | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                quotas_type_0 = Quotas.from_dict(data)



                return quotas_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Quotas | Unset, data)

        quotas = _parse_quotas(d.pop("quotas", UNSET))


        def _parse_boinc_authenticator(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        boinc_authenticator = _parse_boinc_authenticator(d.pop("boinc_authenticator", UNSET))


        def _parse_disabled(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        disabled = _parse_disabled(d.pop("disabled", UNSET))


        user_patch = cls(
            admin=admin,
            quotas=quotas,
            boinc_authenticator=boinc_authenticator,
            disabled=disabled,
        )

        return user_patch

