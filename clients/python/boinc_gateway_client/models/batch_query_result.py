from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.batch_query_group import BatchQueryGroup





T = TypeVar("T", bound="BatchQueryResult")



@_attrs_define
class BatchQueryResult:
    """ 
        Attributes:
            cursor (str):
            batches (list[BatchQueryGroup]):
     """

    cursor: str
    batches: list[BatchQueryGroup]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.batch_query_group import BatchQueryGroup # noqa: PLC0415
        cursor = self.cursor

        batches = []
        for batches_item_data in self.batches:
            batches_item = batches_item_data.to_dict()
            batches.append(batches_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "cursor": cursor,
            "batches": batches,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.batch_query_group import BatchQueryGroup # noqa: PLC0415
        d = dict(src_dict)
        cursor = d.pop("cursor")

        batches = []
        _batches = d.pop("batches")
        for batches_item_data in (_batches):
            batches_item = BatchQueryGroup.from_dict(batches_item_data)



            batches.append(batches_item)


        batch_query_result = cls(
            cursor=cursor,
            batches=batches,
        )


        batch_query_result.additional_properties = d
        return batch_query_result

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
