from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.http_validation_error import HTTPValidationError
from ...models.job_state import JobState
from ...models.page_job_list_item import PageJobListItem
from ...models.problem import Problem
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    name: str,
    *,
    state: JobState | None | Unset = UNSET,
    since: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_state: None | str | Unset
    if isinstance(state, Unset):
        json_state = UNSET
    elif isinstance(state, JobState):
        json_state = state.value
    else:
        json_state = state
    params["state"] = json_state

    json_since: None | str | Unset
    if isinstance(since, Unset):
        json_since = UNSET
    else:
        json_since = since
    params["since"] = json_since

    params["limit"] = limit

    json_cursor: None | str | Unset
    if isinstance(cursor, Unset):
        json_cursor = UNSET
    else:
        json_cursor = cursor
    params["cursor"] = json_cursor


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/batches/{name}/jobs".format(name=quote(str(name), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> HTTPValidationError | PageJobListItem | Problem | None:
    if response.status_code == 200:
        response_200 = PageJobListItem.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[HTTPValidationError | PageJobListItem | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    state: JobState | None | Unset = UNSET,
    since: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,

) -> Response[HTTPValidationError | PageJobListItem | Problem]:
    """ List Batch Jobs

     A batch's jobs in creation order, with their state.

    Args:
        name (str):
        state (JobState | None | Unset):
        since (None | str | Unset): change cursor: only jobs changed after it
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[HTTPValidationError | PageJobListItem | Problem]
     """


    kwargs = _get_kwargs(
        name=name,
state=state,
since=since,
limit=limit,
cursor=cursor,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    name: str,
    *,
    client: AuthenticatedClient,
    state: JobState | None | Unset = UNSET,
    since: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,

) -> HTTPValidationError | PageJobListItem | Problem | None:
    """ List Batch Jobs

     A batch's jobs in creation order, with their state.

    Args:
        name (str):
        state (JobState | None | Unset):
        since (None | str | Unset): change cursor: only jobs changed after it
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        HTTPValidationError | PageJobListItem | Problem
     """


    return sync_detailed(
        name=name,
client=client,
state=state,
since=since,
limit=limit,
cursor=cursor,

    ).parsed

async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    state: JobState | None | Unset = UNSET,
    since: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,

) -> Response[HTTPValidationError | PageJobListItem | Problem]:
    """ List Batch Jobs

     A batch's jobs in creation order, with their state.

    Args:
        name (str):
        state (JobState | None | Unset):
        since (None | str | Unset): change cursor: only jobs changed after it
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[HTTPValidationError | PageJobListItem | Problem]
     """


    kwargs = _get_kwargs(
        name=name,
state=state,
since=since,
limit=limit,
cursor=cursor,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient,
    state: JobState | None | Unset = UNSET,
    since: None | str | Unset = UNSET,
    limit: int | Unset = 100,
    cursor: None | str | Unset = UNSET,

) -> HTTPValidationError | PageJobListItem | Problem | None:
    """ List Batch Jobs

     A batch's jobs in creation order, with their state.

    Args:
        name (str):
        state (JobState | None | Unset):
        since (None | str | Unset): change cursor: only jobs changed after it
        limit (int | Unset):  Default: 100.
        cursor (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        HTTPValidationError | PageJobListItem | Problem
     """


    return (await asyncio_detailed(
        name=name,
client=client,
state=state,
since=since,
limit=limit,
cursor=cursor,

    )).parsed
