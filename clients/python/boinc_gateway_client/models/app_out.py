from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.app_output import AppOutput
  from ..models.boinc_spec import BoincSpec
  from ..models.job_params import JobParams
  from ..models.local_spec import LocalSpec





T = TypeVar("T", bound="AppOut")



@_attrs_define
class AppOut:
    """ 
        Attributes:
            name (str):
            description (str):
            inputs (list[str]):
            outputs (list[AppOutput]):
            params (JobParams): BOINC job parameters (``priority`` is a batch/job priority, higher runs first).
            created_at (float):
            allowed_users (list[str] | None | Unset):
            local (LocalSpec | None | Unset):
            boinc (BoincSpec | None | Unset):
     """

    name: str
    description: str
    inputs: list[str]
    outputs: list[AppOutput]
    params: JobParams
    created_at: float
    allowed_users: list[str] | None | Unset = UNSET
    local: LocalSpec | None | Unset = UNSET
    boinc: BoincSpec | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.app_output import AppOutput # noqa: PLC0415
        from ..models.boinc_spec import BoincSpec # noqa: PLC0415
        from ..models.job_params import JobParams # noqa: PLC0415
        from ..models.local_spec import LocalSpec # noqa: PLC0415
        name = self.name

        description = self.description

        inputs = self.inputs



        outputs = []
        for outputs_item_data in self.outputs:
            outputs_item = outputs_item_data.to_dict()
            outputs.append(outputs_item)



        params = self.params.to_dict()

        created_at = self.created_at

        allowed_users: list[str] | None | Unset
        if isinstance(self.allowed_users, Unset):
            allowed_users = UNSET
        elif isinstance(self.allowed_users, list):
            allowed_users = self.allowed_users


        else:
            allowed_users = self.allowed_users

        local: dict[str, Any] | None | Unset
        if isinstance(self.local, Unset):
            local = UNSET
        elif isinstance(self.local, LocalSpec):
            local = self.local.to_dict()
        else:
            local = self.local

        boinc: dict[str, Any] | None | Unset
        if isinstance(self.boinc, Unset):
            boinc = UNSET
        elif isinstance(self.boinc, BoincSpec):
            boinc = self.boinc.to_dict()
        else:
            boinc = self.boinc


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
            "description": description,
            "inputs": inputs,
            "outputs": outputs,
            "params": params,
            "created_at": created_at,
        })
        if allowed_users is not UNSET:
            field_dict["allowed_users"] = allowed_users
        if local is not UNSET:
            field_dict["local"] = local
        if boinc is not UNSET:
            field_dict["boinc"] = boinc

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.app_output import AppOutput # noqa: PLC0415
        from ..models.boinc_spec import BoincSpec # noqa: PLC0415
        from ..models.job_params import JobParams # noqa: PLC0415
        from ..models.local_spec import LocalSpec # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        description = d.pop("description")

        inputs = cast(list[str], d.pop("inputs"))


        outputs = []
        _outputs = d.pop("outputs")
        for outputs_item_data in (_outputs):
            outputs_item = AppOutput.from_dict(outputs_item_data)



            outputs.append(outputs_item)


        params = JobParams.from_dict(d.pop("params"))




        created_at = d.pop("created_at")

        def _parse_allowed_users(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                allowed_users_type_0 = cast(list[str], data)

                return allowed_users_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        allowed_users = _parse_allowed_users(d.pop("allowed_users", UNSET))


        def _parse_local(data: object) -> LocalSpec | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                local_type_0 = LocalSpec.from_dict(data)



                return local_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LocalSpec | None | Unset, data)

        local = _parse_local(d.pop("local", UNSET))


        def _parse_boinc(data: object) -> BoincSpec | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                boinc_type_0 = BoincSpec.from_dict(data)



                return boinc_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BoincSpec | None | Unset, data)

        boinc = _parse_boinc(d.pop("boinc", UNSET))


        app_out = cls(
            name=name,
            description=description,
            inputs=inputs,
            outputs=outputs,
            params=params,
            created_at=created_at,
            allowed_users=allowed_users,
            local=local,
            boinc=boinc,
        )


        app_out.additional_properties = d
        return app_out

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
