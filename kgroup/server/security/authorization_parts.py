"""A check's answer in parts, for the topic and cluster checks (`authorization`) and the group
checks (`authorization_groups`) alike: the request's items split into allowed and denied, the
handler answering the allowed part, the refusals merged into its response."""

from __future__ import annotations

import inspect


async def answer(handler, broker, request, ctx):
    result = handler(broker, request, ctx)
    return (await result) if inspect.isawaitable(result) else result


def split(items, allowed):
    """(allowed, denied) items, each list in request order."""
    kept, denied = [], []
    for item in items:
        (kept if allowed(item) else denied).append(item)
    return kept, denied


def merged(handler, broker, request, ctx, field, extra):
    """The handler's response with `extra` entries added to its list `field` (awaited if need be)."""
    if not extra:
        return handler(broker, request, ctx)

    async def with_extra():
        response = await answer(handler, broker, request, ctx)
        if response is not None:
            getattr(response, field).extend(extra)
        return response
    return with_extra()
