from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="InputSpec")



@_attrs_define
class InputSpec:
    """ Binds one app input: by ``md5``, by inline ``content``, or by ``url`` (+ md5, size).

        Attributes:
            name (str):
            md5 (None | str | Unset):
            content (None | str | Unset):
            url (None | str | Unset):
            size (int | None | Unset):
     """

    name: str
    md5: None | str | Unset = UNSET
    content: None | str | Unset = UNSET
    url: None | str | Unset = UNSET
    size: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        name = self.name

        md5: None | str | Unset
        if isinstance(self.md5, Unset):
            md5 = UNSET
        else:
            md5 = self.md5

        content: None | str | Unset
        if isinstance(self.content, Unset):
            content = UNSET
        else:
            content = self.content

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
            url = self.url

        size: int | None | Unset
        if isinstance(self.size, Unset):
            size = UNSET
        else:
            size = self.size


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "name": name,
        })
        if md5 is not UNSET:
            field_dict["md5"] = md5
        if content is not UNSET:
            field_dict["content"] = content
        if url is not UNSET:
            field_dict["url"] = url
        if size is not UNSET:
            field_dict["size"] = size

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        name = d.pop("name")

        def _parse_md5(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        md5 = _parse_md5(d.pop("md5", UNSET))


        def _parse_content(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        content = _parse_content(d.pop("content", UNSET))


        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))


        def _parse_size(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        size = _parse_size(d.pop("size", UNSET))


        input_spec = cls(
            name=name,
            md5=md5,
            content=content,
            url=url,
            size=size,
        )

        return input_spec

