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





T = TypeVar("T", bound="AppIn")



@_attrs_define
class AppIn:
    """ 
        Attributes:
            name (str):
            description (str | Unset):  Default: ''.
            inputs (list[str] | Unset):
            outputs (list[AppOutput | str] | Unset):
            allowed_users (list[str] | None | Unset):
            local (LocalSpec | None | Unset):
            boinc (BoincSpec | None | Unset):
            params (JobParams | Unset): BOINC job parameters (``priority`` is a batch/job priority, higher runs first).
     """

    name: str
    description: str | Unset = ''
    inputs: list[str] | Unset = UNSET
    outputs: list[AppOutput | str] | Unset = UNSET
    allowed_users: list[str] | None | Unset = UNSET
    local: LocalSpec | None | Unset = UNSET
    boinc: BoincSpec | None | Unset = UNSET
    params: JobParams | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.app_output import AppOutput # noqa: PLC0415
        from ..models.boinc_spec import BoincSpec # noqa: PLC0415
        from ..models.job_params import JobParams # noqa: PLC0415
        from ..models.local_spec import LocalSpec # noqa: PLC0415
        name = self.name

        description = self.description

        inputs: list[str] | Unset = UNSET
        if not isinstance(self.inputs, Unset):
            inputs = self.inputs



        outputs: list[dict[str, Any] | str] | Unset = UNSET
        if not isinstance(self.outputs, Unset):
            outputs = []
            for outputs_item_data in self.outputs:
                outputs_item: dict[str, Any] | str
                if isinstance(outputs_item_data, AppOutput):
                    outputs_item = outputs_item_data.to_dict()
                else:
                    outputs_item = outputs_item_data
                outputs.append(outputs_item)



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

        params: dict[str, Any] | Unset = UNSET
        if not isinstance(self.params, Unset):
            params = self.params.to_dict()


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if description is not UNSET:
            field_dict["description"] = description
        if inputs is not UNSET:
            field_dict["inputs"] = inputs
        if outputs is not UNSET:
            field_dict["outputs"] = outputs
        if allowed_users is not UNSET:
            field_dict["allowed_users"] = allowed_users
        if local is not UNSET:
            field_dict["local"] = local
        if boinc is not UNSET:
            field_dict["boinc"] = boinc
        if params is not UNSET:
            field_dict["params"] = params

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.app_output import AppOutput # noqa: PLC0415
        from ..models.boinc_spec import BoincSpec # noqa: PLC0415
        from ..models.job_params import JobParams # noqa: PLC0415
        from ..models.local_spec import LocalSpec # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        description = d.pop("description", UNSET)

        inputs = cast(list[str], d.pop("inputs", UNSET))


        _outputs = d.pop("outputs", UNSET)
        outputs: list[AppOutput | str] | Unset = UNSET
        if _outputs is not UNSET:
            outputs = []
            for outputs_item_data in _outputs:
                def _parse_outputs_item(data: object) -> AppOutput | str:
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        outputs_item_type_1 = AppOutput.from_dict(data)



                        return outputs_item_type_1
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    return cast(AppOutput | str, data)

                outputs_item = _parse_outputs_item(outputs_item_data)

                outputs.append(outputs_item)


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


        _params = d.pop("params", UNSET)
        params: JobParams | Unset
        if isinstance(_params,  Unset):
            params = UNSET
        else:
            params = JobParams.from_dict(_params)




        app_in = cls(
            name=name,
            description=description,
            inputs=inputs,
            outputs=outputs,
            allowed_users=allowed_users,
            local=local,
            boinc=boinc,
            params=params,
        )

        return app_in

