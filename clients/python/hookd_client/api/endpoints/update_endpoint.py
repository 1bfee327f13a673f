from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.endpoint_fields import EndpointFields
from ...models.endpoint_view import EndpointView
from ...models.error_body import ErrorBody
from ...types import Response


def _get_kwargs(
    endpoint: str,
    *,
    body: EndpointFields,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/v1/endpoints/{endpoint}".format(
            endpoint=quote(str(endpoint), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> EndpointView | ErrorBody | None:
    if response.status_code == 200:
        response_200 = EndpointView.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = ErrorBody.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())

        return response_404

    if response.status_code == 408:
        response_408 = ErrorBody.from_dict(response.json())

        return response_408

    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = ErrorBody.from_dict(response.json())

        return response_415

    if response.status_code == 422:
        response_422 = ErrorBody.from_dict(response.json())

        return response_422

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[EndpointView | ErrorBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    endpoint: str,
    *,
    client: AuthenticatedClient | Client,
    body: EndpointFields,
) -> Response[EndpointView | ErrorBody]:
    """Change an endpoint

    Args:
        endpoint (str): An endpoint's id, or the uid it was given (`shop-orders`).
        body (EndpointFields): Fields of an endpoint as a producer writes them. In a PATCH, an
            absent
            field is left alone and `null` resets it to its default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EndpointView | ErrorBody]
    """

    kwargs = _get_kwargs(
        endpoint=endpoint,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    endpoint: str,
    *,
    client: AuthenticatedClient | Client,
    body: EndpointFields,
) -> EndpointView | ErrorBody | None:
    """Change an endpoint

    Args:
        endpoint (str): An endpoint's id, or the uid it was given (`shop-orders`).
        body (EndpointFields): Fields of an endpoint as a producer writes them. In a PATCH, an
            absent
            field is left alone and `null` resets it to its default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EndpointView | ErrorBody
    """

    return sync_detailed(
        endpoint=endpoint,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    endpoint: str,
    *,
    client: AuthenticatedClient | Client,
    body: EndpointFields,
) -> Response[EndpointView | ErrorBody]:
    """Change an endpoint

    Args:
        endpoint (str): An endpoint's id, or the uid it was given (`shop-orders`).
        body (EndpointFields): Fields of an endpoint as a producer writes them. In a PATCH, an
            absent
            field is left alone and `null` resets it to its default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EndpointView | ErrorBody]
    """

    kwargs = _get_kwargs(
        endpoint=endpoint,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    endpoint: str,
    *,
    client: AuthenticatedClient | Client,
    body: EndpointFields,
) -> EndpointView | ErrorBody | None:
    """Change an endpoint

    Args:
        endpoint (str): An endpoint's id, or the uid it was given (`shop-orders`).
        body (EndpointFields): Fields of an endpoint as a producer writes them. In a PATCH, an
            absent
            field is left alone and `null` resets it to its default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EndpointView | ErrorBody
    """

    return (
        await asyncio_detailed(
            endpoint=endpoint,
            client=client,
            body=body,
        )
    ).parsed
