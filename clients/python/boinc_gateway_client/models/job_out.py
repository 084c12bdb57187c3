from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.job_state import JobState
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.file_ref import FileRef
  from ..models.job_out_env_type_0 import JobOutEnvType0





T = TypeVar("T", bound="JobOut")



@_attrs_define
class JobOut:
    """ 
        Attributes:
            name (str):
            state (JobState): Job states (api.md section 3).
            batch (str):
            app (str):
            args (list[str]):
            inputs (list[FileRef]):
            outputs_wanted (list[str]): the output names the job asked for (its spec's `outputs`, or all of the app's);
                `outputs` lists those it produced
            outputs (list[FileRef]):
            exit_code (int | None):
            wall_seconds (float | None):
            cpu_seconds (float | None):
            error (None | str):
            attempts (int):
            created_at (float):
            started_at (float | None):
            finished_at (float | None):
            change (str):
            env (JobOutEnvType0 | None | Unset):
     """

    name: str
    state: JobState
    batch: str
    app: str
    args: list[str]
    inputs: list[FileRef]
    outputs_wanted: list[str]
    outputs: list[FileRef]
    exit_code: int | None
    wall_seconds: float | None
    cpu_seconds: float | None
    error: None | str
    attempts: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    change: str
    env: JobOutEnvType0 | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.file_ref import FileRef # noqa: PLC0415
        from ..models.job_out_env_type_0 import JobOutEnvType0 # noqa: PLC0415
        name = self.name

        state = self.state.value

        batch = self.batch

        app = self.app

        args = self.args



        inputs = []
        for inputs_item_data in self.inputs:
            inputs_item = inputs_item_data.to_dict()
            inputs.append(inputs_item)



        outputs_wanted = self.outputs_wanted



        outputs = []
        for outputs_item_data in self.outputs:
            outputs_item = outputs_item_data.to_dict()
            outputs.append(outputs_item)



        exit_code: int | None
        exit_code = self.exit_code

        wall_seconds: float | None
        wall_seconds = self.wall_seconds

        cpu_seconds: float | None
        cpu_seconds = self.cpu_seconds

        error: None | str
        error = self.error

        attempts = self.attempts

        created_at = self.created_at

        started_at: float | None
        started_at = self.started_at

        finished_at: float | None
        finished_at = self.finished_at

        change = self.change

        env: dict[str, Any] | None | Unset
        if isinstance(self.env, Unset):
            env = UNSET
        elif isinstance(self.env, JobOutEnvType0):
            env = self.env.to_dict()
        else:
            env = self.env


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
            "state": state,
            "batch": batch,
            "app": app,
            "args": args,
            "inputs": inputs,
            "outputs_wanted": outputs_wanted,
            "outputs": outputs,
            "exit_code": exit_code,
            "wall_seconds": wall_seconds,
            "cpu_seconds": cpu_seconds,
            "error": error,
            "attempts": attempts,
            "created_at": created_at,
            "started_at": started_at,
            "finished_at": finished_at,
            "change": change,
        })
        if env is not UNSET:
            field_dict["env"] = env

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.file_ref import FileRef # noqa: PLC0415
        from ..models.job_out_env_type_0 import JobOutEnvType0 # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        state = JobState(d.pop("state"))




        batch = d.pop("batch")

        app = d.pop("app")

        args = cast(list[str], d.pop("args"))


        inputs = []
        _inputs = d.pop("inputs")
        for inputs_item_data in (_inputs):
            inputs_item = FileRef.from_dict(inputs_item_data)



            inputs.append(inputs_item)


        outputs_wanted = cast(list[str], d.pop("outputs_wanted"))


        outputs = []
        _outputs = d.pop("outputs")
        for outputs_item_data in (_outputs):
            outputs_item = FileRef.from_dict(outputs_item_data)



            outputs.append(outputs_item)


        def _parse_exit_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        exit_code = _parse_exit_code(d.pop("exit_code"))


        def _parse_wall_seconds(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        wall_seconds = _parse_wall_seconds(d.pop("wall_seconds"))


        def _parse_cpu_seconds(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        cpu_seconds = _parse_cpu_seconds(d.pop("cpu_seconds"))


        def _parse_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))


        attempts = d.pop("attempts")

        created_at = d.pop("created_at")

        def _parse_started_at(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        started_at = _parse_started_at(d.pop("started_at"))


        def _parse_finished_at(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))


        change = d.pop("change")

        def _parse_env(data: object) -> JobOutEnvType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                env_type_0 = JobOutEnvType0.from_dict(data)



                return env_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobOutEnvType0 | None | Unset, data)

        env = _parse_env(d.pop("env", UNSET))


        job_out = cls(
            name=name,
            state=state,
            batch=batch,
            app=app,
            args=args,
            inputs=inputs,
            outputs_wanted=outputs_wanted,
            outputs=outputs,
            exit_code=exit_code,
            wall_seconds=wall_seconds,
            cpu_seconds=cpu_seconds,
            error=error,
            attempts=attempts,
            created_at=created_at,
            started_at=started_at,
            finished_at=finished_at,
            change=change,
            env=env,
        )


        job_out.additional_properties = d
        return job_out

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
