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





T = TypeVar("T", bound="UserCreate")



@_attrs_define
class UserCreate:
    """ 
        Attributes:
            name (str):
            admin (bool | Unset):  Default: False.
            quotas (None | Quotas | Unset):
            boinc_authenticator (None | str | Unset):
     """

    name: str
    admin: bool | Unset = False
    quotas: None | Quotas | Unset = UNSET
    boinc_authenticator: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.quotas import Quotas # noqa: PLC0415
        name = self.name

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


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if admin is not UNSET:
            field_dict["admin"] = admin
        if quotas is not UNSET:
            field_dict["quotas"] = quotas
        if boinc_authenticator is not UNSET:
            field_dict["boinc_authenticator"] = boinc_authenticator

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quotas import Quotas # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        admin = d.pop("admin", UNSET)

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


        user_create = cls(
            name=name,
            admin=admin,
            quotas=quotas,
            boinc_authenticator=boinc_authenticator,
        )

        return user_create

