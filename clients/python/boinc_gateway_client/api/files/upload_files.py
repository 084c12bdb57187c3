from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.body_upload_files import BodyUploadFiles
from ...models.http_validation_error import HTTPValidationError
from ...models.problem import Problem
from ...models.uploaded_file import UploadedFile
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    body: BodyUploadFiles,
    batch: None | str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    params: dict[str, Any] = {}

    json_batch: None | str | Unset
    if isinstance(batch, Unset):
        json_batch = UNSET
    else:
        json_batch = batch
    params["batch"] = json_batch


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/files",
        "params": params,
    }

    _kwargs["files"] = body.to_multipart()

    headers["Content-Type"] = "multipart/form-data; boundary=+++"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> HTTPValidationError | Problem | list[UploadedFile] | None:
    if response.status_code == 201:
        response_201 = []
        _response_201 = response.json()
        for response_201_item_data in (_response_201):
            response_201_item = UploadedFile.from_dict(response_201_item_data)



            response_201.append(response_201_item)

        return response_201

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())



        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())



        return response_404

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())



        return response_409

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())



        return response_413

    if response.status_code == 422:
        response_422 = HTTPValidationError.from_dict(response.json())



        return response_422

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())



        return response_503

    if response.status_code == 507:
        response_507 = Problem.from_dict(response.json())



        return response_507

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[HTTPValidationError | Problem | list[UploadedFile]]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: BodyUploadFiles,
    batch: None | str | Unset = UNSET,

) -> Response[HTTPValidationError | Problem | list[UploadedFile]]:
    """ Upload Files

     Upload files as multipart form parts named ``file`` (for browsers and ``curl -F``).

    Args:
        batch (None | str | Unset): associate with this batch
        body (BodyUploadFiles):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[HTTPValidationError | Problem | list[UploadedFile]]
     """


    kwargs = _get_kwargs(
        body=body,
batch=batch,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    body: BodyUploadFiles,
    batch: None | str | Unset = UNSET,

) -> HTTPValidationError | Problem | list[UploadedFile] | None:
    """ Upload Files

     Upload files as multipart form parts named ``file`` (for browsers and ``curl -F``).

    Args:
        batch (None | str | Unset): associate with this batch
        body (BodyUploadFiles):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        HTTPValidationError | Problem | list[UploadedFile]
     """


    return sync_detailed(
        client=client,
body=body,
batch=batch,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: BodyUploadFiles,
    batch: None | str | Unset = UNSET,

) -> Response[HTTPValidationError | Problem | list[UploadedFile]]:
    """ Upload Files

     Upload files as multipart form parts named ``file`` (for browsers and ``curl -F``).

    Args:
        batch (None | str | Unset): associate with this batch
        body (BodyUploadFiles):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[HTTPValidationError | Problem | list[UploadedFile]]
     """


    kwargs = _get_kwargs(
        body=body,
batch=batch,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    body: BodyUploadFiles,
    batch: None | str | Unset = UNSET,

) -> HTTPValidationError | Problem | list[UploadedFile] | None:
    """ Upload Files

     Upload files as multipart form parts named ``file`` (for browsers and ``curl -F``).

    Args:
        batch (None | str | Unset): associate with this batch
        body (BodyUploadFiles):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        HTTPValidationError | Problem | list[UploadedFile]
     """


    return (await asyncio_detailed(
        client=client,
body=body,
batch=batch,

    )).parsed
