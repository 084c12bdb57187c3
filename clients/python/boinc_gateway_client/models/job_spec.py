from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.input_spec import InputSpec
  from ..models.job_params import JobParams
  from ..models.job_spec_env_type_0 import JobSpecEnvType0





T = TypeVar("T", bound="JobSpec")



@_attrs_define
class JobSpec:
    """ 
        Attributes:
            name (str):
            args (list[str] | Unset):
            inputs (list[InputSpec] | Unset):
            outputs (list[str] | None | Unset):
            params (JobParams | None | Unset):
            env (JobSpecEnvType0 | None | Unset): Environment variables for the job, on top of the clean environment the
                local backend gives every job (the boinc backend refuses them).
     """

    name: str
    args: list[str] | Unset = UNSET
    inputs: list[InputSpec] | Unset = UNSET
    outputs: list[str] | None | Unset = UNSET
    params: JobParams | None | Unset = UNSET
    env: JobSpecEnvType0 | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.input_spec import InputSpec # noqa: PLC0415
        from ..models.job_params import JobParams # noqa: PLC0415
        from ..models.job_spec_env_type_0 import JobSpecEnvType0 # noqa: PLC0415
        name = self.name

        args: list[str] | Unset = UNSET
        if not isinstance(self.args, Unset):
            args = self.args



        inputs: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.inputs, Unset):
            inputs = []
            for inputs_item_data in self.inputs:
                inputs_item = inputs_item_data.to_dict()
                inputs.append(inputs_item)



        outputs: list[str] | None | Unset
        if isinstance(self.outputs, Unset):
            outputs = UNSET
        elif isinstance(self.outputs, list):
            outputs = self.outputs


        else:
            outputs = self.outputs

        params: dict[str, Any] | None | Unset
        if isinstance(self.params, Unset):
            params = UNSET
        elif isinstance(self.params, JobParams):
            params = self.params.to_dict()
        else:
            params = self.params

        env: dict[str, Any] | None | Unset
        if isinstance(self.env, Unset):
            env = UNSET
        elif isinstance(self.env, JobSpecEnvType0):
            env = self.env.to_dict()
        else:
            env = self.env


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if args is not UNSET:
            field_dict["args"] = args
        if inputs is not UNSET:
            field_dict["inputs"] = inputs
        if outputs is not UNSET:
            field_dict["outputs"] = outputs
        if params is not UNSET:
            field_dict["params"] = params
        if env is not UNSET:
            field_dict["env"] = env

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.input_spec import InputSpec # noqa: PLC0415
        from ..models.job_params import JobParams # noqa: PLC0415
        from ..models.job_spec_env_type_0 import JobSpecEnvType0 # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        args = cast(list[str], d.pop("args", UNSET))


        _inputs = d.pop("inputs", UNSET)
        inputs: list[InputSpec] | Unset = UNSET
        if _inputs is not UNSET:
            inputs = []
            for inputs_item_data in _inputs:
                inputs_item = InputSpec.from_dict(inputs_item_data)



                inputs.append(inputs_item)


        def _parse_outputs(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                outputs_type_0 = cast(list[str], data)

                return outputs_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        outputs = _parse_outputs(d.pop("outputs", UNSET))


        def _parse_params(data: object) -> JobParams | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                params_type_0 = JobParams.from_dict(data)



                return params_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobParams | None | Unset, data)

        params = _parse_params(d.pop("params", UNSET))


        def _parse_env(data: object) -> JobSpecEnvType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                env_type_0 = JobSpecEnvType0.from_dict(data)



                return env_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobSpecEnvType0 | None | Unset, data)

        env = _parse_env(d.pop("env", UNSET))


        job_spec = cls(
            name=name,
            args=args,
            inputs=inputs,
            outputs=outputs,
            params=params,
            env=env,
        )

        return job_spec

