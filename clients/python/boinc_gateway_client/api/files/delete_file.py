from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.http_validation_error import HTTPValidationError
from ...models.problem import Problem
from typing import cast



def _get_kwargs(
    md5: str,

) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/files/{md5}".format(md5=quote(str(md5), safe=""),),
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | HTTPValidationError | Problem | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())



        return response_401

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())



        return response_404

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | HTTPValidationError | Problem]:
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

) -> Response[Any | HTTPValidationError | Problem]:
    """ Delete File

     Drop your claim on a file; its bytes go once nothing else needs them.

    Args:
        md5 (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | HTTPValidationError | Problem]
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

) -> Any | HTTPValidationError | Problem | None:
    """ Delete File

     Drop your claim on a file; its bytes go once nothing else needs them.

    Args:
        md5 (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | HTTPValidationError | Problem
     """


    return sync_detailed(
        md5=md5,
client=client,

    ).parsed

async def asyncio_detailed(
    md5: str,
    *,
    client: AuthenticatedClient,

) -> Response[Any | HTTPValidationError | Problem]:
    """ Delete File

     Drop your claim on a file; its bytes go once nothing else needs them.

    Args:
        md5 (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | HTTPValidationError | Problem]
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

) -> Any | HTTPValidationError | Problem | None:
    """ Delete File

     Drop your claim on a file; its bytes go once nothing else needs them.

    Args:
        md5 (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | HTTPValidationError | Problem
     """


    return (await asyncio_detailed(
        md5=md5,
client=client,

    )).parsed
