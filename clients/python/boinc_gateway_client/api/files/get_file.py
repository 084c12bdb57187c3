from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.http_validation_error import HTTPValidationError
from ...models.problem import Problem
from ...types import File, FileTypes
from io import BytesIO
from typing import cast



def _get_kwargs(
    md5: str,

) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/files/{md5}".format(md5=quote(str(md5), safe=""),),
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> File | HTTPValidationError | Problem | None:
    if response.status_code == 200:
        response_200 = File(
             payload = BytesIO(response.content)
        )



        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())



        return response_401

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())



        return response_404

    if response.status_code == 416:
        response_416 = Problem.from_dict(response.json())



        return response_416

    if response.status_code == 422:
        response_422 = HTTPValidationError.from_dict(response.json())



        return response_422

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[File | HTTPValidationError | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    md5: str,
    *,
    client: AuthenticatedClient,

) -> Response[File | HTTPValidationError | Problem]:
    """ Get File

     Download a file you have (ETag is the MD5; ``Range`` requests are honoured).

    Args:
        md5 (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[File | HTTPValidationError | Problem]
     """


    kwargs = _get_kwargs(
        md5=md5,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    md5: str,
    *,
    client: AuthenticatedClient,

) -> File | HTTPValidationError | Problem | None:
    """ Get File

     Download a file you have (ETag is the MD5; ``Range`` requests are honoured).

    Args:
        md5 (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        File | HTTPValidationError | Problem
     """


    return sync_detailed(
        md5=md5,
client=client,

    ).parsed

async def asyncio_detailed(
    md5: str,
    *,
    client: AuthenticatedClient,

) -> Response[File | HTTPValidationError | Problem]:
    """ Get File

     Download a file you have (ETag is the MD5; ``Range`` requests are honoured).

    Args:
        md5 (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[File | HTTPValidationError | Problem]
     """


    kwargs = _get_kwargs(
        md5=md5,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    md5: str,
    *,
    client: AuthenticatedClient,

) -> File | HTTPValidationError | Problem | None:
    """ Get File

     Download a file you have (ETag is the MD5; ``Range`` requests are honoured).

    Args:
        md5 (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        File | HTTPValidationError | Problem
     """


    return (await asyncio_detailed(
        md5=md5,
client=client,

    )).parsed
