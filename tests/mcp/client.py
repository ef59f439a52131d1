#!/usr/bin/env python3
"""Checks Wayfinder's MCP endpoint with the official MCP Python SDK, over streamable HTTP.

Run it with the venv that scripts/setup makes (tests/mcp/requirements.txt pins the SDK):

    .wayfinder/mcp-venv/bin/python tests/mcp/client.py [--tenant NAME] [--mode MODE] CHECK URL [URL2]

URL is the endpoint, e.g. http://127.0.0.1:4000/mcp. It prints one line per assertion ("ok ...")
and exits 0 when every assertion held, 1 when one failed (saying what was expected and what came
back), 2 on a usage error and 3 when the endpoint could not be reached or spoke no MCP at all.

Checks (the server is stateless and answers JSON; every tool error is a result with isError and
the text {"errors":[{"message":..., "extensions":{"code":...}}]}):

  tools           initialize, list tools: exactly search, introspect, validate and execute, each
                  with a description and an input schema requiring query / coordinates /
                  operation / query. Run in both protocol modes unless --mode picks one.
  search          search "books a customer ordered" lists Customer.orders; its SDL block is
                  non-empty and mentions orders.
  introspect      introspect Customer.orders at depth 1 is SDL (parsed with graphql-core) defining
                  Customer (with orders) and Order.
  validate        an unknown field is reported with its name and a line 1 location; a valid
                  operation reads `valid`.
  execute         { me { displayName } } answers Ada; mutations and subscriptions are refused.
  contract        (with --tenant public) the internal fields Book.costCents and
                  Customer.supportNotes are hidden: not found by search, unknown to introspect
                  (reading exactly like a field that does not exist), absent from type SDL, invalid
                  in validate and refused by execute.
  contract-staff  (with --tenant staff) introspect Book.costCents succeeds.
  errors          unknown tool (JSON-RPC -32602, data.code MCP_UNKNOWN_TOOL), missing and
                  out-of-range arguments, an over-long query, and a body that is not JSON (raw
                  HTTP, answered below 500).
  replica URL2    initialize on URL hands out no Mcp-Session-Id; a tools/call sent straight to
                  URL2 (another replica), with no session and no initialize there, succeeds.
  all             tools, search, introspect, validate, execute and errors, in that order.

Protocol modes (--mode; the SDK's Client(mode=...)):
  legacy  the initialize handshake (protocol 2025-11-25 and older), then requests carrying the
          negotiated MCP-Protocol-Version header.
  modern  the stateless 2026-07-28 protocol pinned: no handshake, every request carries its
          version, client info and capabilities in params._meta and the MCP-Protocol-Version,
          Mcp-Method and Mcp-Name headers.
  auto    the SDK's default: probe server/discover, fall back to initialize.
The default is both legacy and modern for `tools`, auto for every other check.

--tenant NAME sends `x-wayfinder-tenant: NAME` on every HTTP request (the SDK's and the raw ones);
each check verifies afterwards that no request went out without it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from graphql import GraphQLError, parse
from graphql.language import TypeDefinitionNode, TypeExtensionNode
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Implementation, TextContent
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION
from pydantic import ValidationError

TENANT_HEADER = "x-wayfinder-tenant"
SESSION_HEADER = "mcp-session-id"
MODES = {"legacy": "legacy", "modern": LATEST_MODERN_VERSION, "auto": "auto"}
CLIENT_INFO = Implementation(name="wayfinder-mcp-test", version="1")


class CheckFailed(Exception):
    """An assertion that did not hold: what was checked, what was expected, what came back."""

    def __init__(self, what: str, expected: str, got: Any):
        super().__init__(what)
        self.what, self.expected, self.got = what, expected, got


class Unreachable(Exception):
    """The endpoint could not be reached, or did not speak MCP well enough to start a check."""


def ok(message: str) -> None:
    print(f"ok   {message}", flush=True)


def check(condition: bool, what: str, expected: str, got: Any) -> None:
    if not condition:
        raise CheckFailed(what, expected, got)
    ok(what)


def show(value: Any, limit: int = 1500) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=None, default=str)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


# --- HTTP: one httpx2 client per connection, carrying the tenant header and watching every request.


@dataclass
class Wire:
    """Counts the HTTP requests of a check, and the responses that handed out a session id."""

    tenant: str | None
    requests: int = 0
    without_tenant: list[str] = field(default_factory=list)
    session_ids: list[str] = field(default_factory=list)

    def http_client(self, timeout: float) -> httpx2.AsyncClient:
        headers = {TENANT_HEADER: self.tenant} if self.tenant is not None else None

        async def on_request(request: httpx2.Request) -> None:
            self.requests += 1
            if self.tenant is not None and request.headers.get(TENANT_HEADER) != self.tenant:
                self.without_tenant.append(f"{request.method} {request.url}")

        async def on_response(response: httpx2.Response) -> None:
            if (session := response.headers.get(SESSION_HEADER)) is not None:
                self.session_ids.append(session)

        return httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(timeout),
            event_hooks={"request": [on_request], "response": [on_response]},
        )

    def report(self) -> None:
        if self.tenant is None:
            return
        check(
            not self.without_tenant,
            f"{TENANT_HEADER}: {self.tenant} was sent on all {self.requests} HTTP requests",
            f"every request to carry {TENANT_HEADER}",
            self.without_tenant,
        )


@dataclass
class Ctx:
    url: str
    url2: str | None
    tenant: str | None
    mode: str | None
    timeout: float
    wire: Wire = field(init=False)
    current: str = "setup"

    def __post_init__(self) -> None:
        self.wire = Wire(self.tenant)

    @asynccontextmanager
    async def connect(self, mode: str | None = None) -> AsyncIterator[Client]:
        """An SDK client on self.url: streamable HTTP through our httpx2 client, in `mode`."""
        mode = mode or self.mode or "auto"
        async with self.wire.http_client(self.timeout) as http:
            transport = streamable_http_client(self.url, http_client=http)
            client = Client(
                transport,
                mode=MODES[mode],
                client_info=CLIENT_INFO,
                read_timeout_seconds=self.timeout,
                cache=None,  # every list and call reaches the server
            )
            try:
                await client.__aenter__()
            except MCPError as e:
                raise Unreachable(f"{self.url}: the {mode} connect failed with MCP error {e.code}: {e.message}") from e
            try:
                era = (
                    "initialize handshake"
                    if client.session.initialize_result is not None
                    else "stateless, no handshake"
                )
                ok(f"connected to {self.url} in {mode} mode: protocol {client.protocol_version} ({era})")
                yield client
            finally:
                await client.__aexit__(None, None, None)

    async def raw_post(
        self, url: str, body: bytes | dict[str, Any], headers: dict[str, str] | None = None
    ) -> httpx2.Response:
        """One POST outside the SDK, with the tenant header, the MCP accept and content types."""
        all_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        all_headers.update(headers or {})
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        async with self.wire.http_client(self.timeout) as http:
            return await http.post(url, content=content, headers=all_headers)


# --- Reading tool results.


def text_of(result: CallToolResult, what: str) -> str:
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    if not texts:
        raise CheckFailed(what, "a result with a text content block", result.model_dump(mode="json", by_alias=True))
    return "\n".join(texts)


def expect_success(result: CallToolResult, what: str) -> str:
    text = text_of(result, what)
    if result.is_error:
        raise CheckFailed(what, "a successful result (isError false)", f"isError true: {show(text)}")
    return text


def tool_error(result: CallToolResult, what: str) -> tuple[str | None, str, dict[str, Any]]:
    """(code, message, whole body) of an isError result's {"errors":[...]} text."""
    text = text_of(result, what)
    if not result.is_error:
        raise CheckFailed(what, "an isError result", f"isError false: {show(text)}")
    try:
        body = json.loads(text)
        first = body["errors"][0]
        return first.get("extensions", {}).get("code"), first["message"], body
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise CheckFailed(what, 'error text {"errors":[{"message":..,"extensions":{"code":..}}]}', text) from None


def expect_error(result: CallToolResult, what: str, *codes: str) -> tuple[str, dict[str, Any]]:
    code, message, body = tool_error(result, what)
    expected = " or ".join(codes)
    check(code in codes, f"{what}: isError with code {code}", f"code {expected}", show(body))
    return message, body


@dataclass
class SearchPage:
    hits: list[str]
    next_page: str | None
    sdl: str


def parse_search(text: str, what: str) -> SearchPage:
    """Hit lines (`COORD  score S  via A > B`), an optional `next page:` line, a blank line, ```graphql."""
    head, _, _ = text.partition("\n\n")
    hits, next_page = [], None
    for line in head.splitlines():
        if line.startswith("next page:"):
            next_page = line
        elif line.strip():
            hits.append(line.split()[0])
    fence = re.search(r"```graphql\n(.*?)```", text, re.DOTALL)
    if fence is None:
        raise CheckFailed(what, "a ```graphql fenced SDL block after the hits", text)
    return SearchPage(hits, next_page, fence.group(1).strip())


def parse_sdl(text: str, what: str) -> dict[str, Any]:
    """Parse SDL with graphql-core; the type definitions and extensions by name."""
    try:
        document = parse(text)
    except GraphQLError as e:
        raise CheckFailed(what, "SDL that graphql-core parses", f"{e.message} at {e.locations} in:\n{text}") from None
    types = [d for d in document.definitions if isinstance(d, TypeDefinitionNode | TypeExtensionNode)]
    return {d.name.value: d for d in types}


def field_names(node: Any) -> list[str]:
    return [f.name.value for f in (getattr(node, "fields", None) or [])]


# --- The checks.


async def check_tools(ctx: Ctx) -> None:
    modes = [ctx.mode] if ctx.mode else ["legacy", "modern"]
    required = {"search": "query", "introspect": "coordinates", "validate": "operation", "execute": "query"}
    for mode in modes:
        async with ctx.connect(mode) as client:
            listing = await client.list_tools()
            names = sorted(t.name for t in listing.tools)
            check(
                names == sorted(required),
                f"[{mode}] tools/list has exactly {', '.join(sorted(required))}",
                str(sorted(required)),
                names,
            )
            for tool in listing.tools:
                schema = tool.input_schema
                check(
                    bool(tool.description and tool.description.strip()),
                    f"[{mode}] {tool.name} has a description",
                    "a non-empty description",
                    tool.description,
                )
                check(
                    schema.get("type") == "object" and isinstance(schema.get("properties"), dict),
                    f"[{mode}] {tool.name} has an object input schema with properties",
                    'inputSchema {"type":"object","properties":{...}}',
                    schema,
                )
                need = required[tool.name]
                check(
                    need in schema.get("required", []) and need in schema["properties"],
                    f"[{mode}] {tool.name} requires {need}",
                    f"{need!r} in inputSchema.required and .properties",
                    schema,
                )


async def search(client: Client, arguments: dict[str, Any]) -> CallToolResult:
    return await client.call_tool("search", arguments)


async def check_search(ctx: Ctx) -> None:
    async with ctx.connect() as client:
        what = 'search "books a customer ordered"'
        page = parse_search(expect_success(await search(client, {"query": "books a customer ordered"}), what), what)
        check(
            "Customer.orders" in page.hits, f"{what} lists Customer.orders", "Customer.orders among the hits", page.hits
        )
        check(bool(page.sdl), f"{what} has a non-empty SDL block", "SDL inside ```graphql", page.sdl)
        check("orders" in page.sdl, f"{what}: its SDL mentions orders", "`orders` in the SDL block", page.sdl)


async def check_introspect(ctx: Ctx) -> None:
    async with ctx.connect() as client:
        what = "introspect Customer.orders depth 1"
        sdl = expect_success(
            await client.call_tool("introspect", {"coordinates": ["Customer.orders"], "depth": 1}), what
        )
        types = parse_sdl(sdl, what)
        ok(f"{what} is SDL that graphql-core parses ({len(types)} types)")
        check("type Customer" in sdl and "Customer" in types, f"{what} defines type Customer", "type Customer", sdl)
        check("type Order" in sdl and "Order" in types, f"{what} defines type Order", "type Order", sdl)
        check(
            "orders" in field_names(types["Customer"]),
            f"{what}: Customer has the field orders",
            "orders among Customer's fields",
            field_names(types["Customer"]),
        )


def validation_errors(text: str, what: str) -> list[dict[str, Any]]:
    try:
        errors = json.loads(text)["errors"]
        assert isinstance(errors, list) and errors
        return errors
    except (ValueError, KeyError, TypeError, AssertionError):
        raise CheckFailed(what, '`valid` or {"errors":[...]} with at least one error', text) from None


async def check_validate(ctx: Ctx) -> None:
    async with ctx.connect() as client:
        what = "validate { me { displayName nope } }"
        text = expect_success(await client.call_tool("validate", {"operation": "{ me { displayName nope } }"}), what)
        errors = validation_errors(text, what)
        nope = [e for e in errors if "nope" in str(e.get("message", ""))]
        check(bool(nope), f"{what} reports an error naming nope", "an error whose message mentions `nope`", errors)
        locations = nope[0].get("locations") or [{}]
        line, column = locations[0].get("line"), locations[0].get("column")
        check(
            line == 1 and isinstance(column, int) and column > 0,
            f"{what}: the error is located at line {line}, column {column}",
            "locations [{line: 1, column: N > 0}]",
            nope[0],
        )

        what = "validate { me { displayName } }"
        text = expect_success(await client.call_tool("validate", {"operation": "{ me { displayName } }"}), what)
        check(text.strip() == "valid", f"{what} reads valid", "`valid`", text)


async def check_execute(ctx: Ctx) -> None:
    async with ctx.connect() as client:
        what = "execute { me { displayName } }"
        text = expect_success(await client.call_tool("execute", {"query": "{ me { displayName } }"}), what)
        try:
            name = json.loads(text)["data"]["me"]["displayName"]
        except (ValueError, KeyError, TypeError):
            raise CheckFailed(what, "a GraphQL response with data.me.displayName", text) from None
        check(name == "Ada", f"{what} answers data.me.displayName = Ada", '"Ada"', name)

        # The first mutation is the contract's (not even valid against the schema: placeOrder takes
        # `input`); the second is valid, so the refusal cannot be a validation error in disguise.
        for mutation in (
            'mutation { placeOrder(isbn: "978-0") { id } }',
            'mutation { updateDisplayName(name: "Bob") { displayName } }',
        ):
            result = await client.call_tool("execute", {"query": mutation})
            expect_error(result, f"execute {mutation} is refused", "MCP_MUTATION_REFUSED")

        what = "execute subscription { x } is refused"
        result = await client.call_tool("execute", {"query": "subscription { x }"})
        expect_error(result, what, "MCP_SUBSCRIPTION_REFUSED", "GRAPHQL_VALIDATION_FAILED")


async def check_contract(ctx: Ctx) -> None:
    async with ctx.connect() as client:
        what = 'search "cost price paid to the publisher" first 20'
        text = expect_success(await search(client, {"query": "cost price paid to the publisher", "first": 20}), what)
        page = parse_search(text, what)
        check(
            "Book.costCents" not in page.hits,
            f"{what} does not list Book.costCents",
            "no Book.costCents hit",
            page.hits,
        )
        check("costCents" not in text, f"{what} mentions costCents nowhere", "no `costCents` in the text", text)

        what = "introspect Book.costCents"
        hidden, _ = expect_error(
            await client.call_tool("introspect", {"coordinates": ["Book.costCents"]}), what, "UNKNOWN_COORDINATE"
        )
        unknown, _ = expect_error(
            await client.call_tool("introspect", {"coordinates": ["Book.noSuchField"]}),
            "introspect Book.noSuchField",
            "UNKNOWN_COORDINATE",
        )
        renamed = hidden.replace("Book.costCents", "Book.noSuchField").replace("costCents", "noSuchField")
        check(
            renamed == unknown,
            f"{what} reads exactly like an unknown field (message with the coordinate replaced)",
            f"the message for Book.noSuchField: {unknown!r}",
            renamed,
        )

        for type_name, internal in (("Book", "costCents"), ("Customer", "supportNotes")):
            what = f"introspect {type_name} depth 0"
            sdl = expect_success(await client.call_tool("introspect", {"coordinates": [type_name], "depth": 0}), what)
            types = parse_sdl(sdl, what)
            check(type_name in types, f"{what} defines {type_name}", f"type {type_name}", sdl)
            check(internal not in sdl, f"{what} does not mention {internal}", f"no `{internal}`", sdl)

        query = '{ book(isbn: "978-0") { costCents } }'
        what = f"validate {query}"
        text = expect_success(await client.call_tool("validate", {"operation": query}), what)
        errors = validation_errors(text, what)
        check(
            any("costCents" in str(e.get("message", "")) for e in errors),
            f"{what} reports an error naming costCents",
            "an error whose message mentions costCents",
            errors,
        )

        what = f"execute {query}"
        result = await client.call_tool("execute", {"query": query})
        _, _, body = tool_error(result, what)
        ok(f"{what} is isError ({body['errors'][0].get('extensions', {}).get('code')})")
        check(body.get("data") is None, f"{what} has no data", "data absent or null", show(body))


async def check_contract_staff(ctx: Ctx) -> None:
    async with ctx.connect() as client:
        what = "introspect Book.costCents"
        sdl = expect_success(await client.call_tool("introspect", {"coordinates": ["Book.costCents"]}), what)
        check("costCents" in sdl, f"{what} (tenant {ctx.tenant}) shows costCents", "`costCents` in the SDL", sdl)
        parse_sdl(sdl, what)
        ok(f"{what} is SDL that graphql-core parses")


async def check_errors(ctx: Ctx) -> None:
    async with ctx.connect() as client:
        what = "calling the unknown tool nope"
        try:
            result = await client.call_tool("nope", {})
        except MCPError as e:
            ok(f"{what} raises MCPError {e.code}: {e.message}")
            check(e.code == -32602, f"{what}: JSON-RPC code -32602", "-32602", e.code)
            data = e.data if isinstance(e.data, dict) else {}
            check(
                data.get("code") == "MCP_UNKNOWN_TOOL",
                f"{what}: data.code MCP_UNKNOWN_TOOL",
                "MCP_UNKNOWN_TOOL",
                e.data,
            )
        else:
            raise CheckFailed(what, "a JSON-RPC error -32602", result.model_dump(mode="json", by_alias=True))

        expect_error(await search(client, {}), "search {} (no query)", "MCP_INVALID_ARGUMENTS")
        expect_error(await search(client, {"query": "x", "first": -1}), "search first -1", "SEARCH_FIRST_OUT_OF_RANGE")
        expect_error(
            await search(client, {"query": "x" * 5000}), "search with a 5000-character query", "SEARCH_QUERY_TOO_LONG"
        )

    what = "a POST whose body is not JSON"
    response = await ctx.raw_post(ctx.url, b'{"jsonrpc": "2.0", "id": 1, "method": ')
    check(
        response.status_code < 500,
        f"{what} is answered {response.status_code}",
        "an HTTP status below 500",
        response.text,
    )


def rpc_messages(response: httpx2.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response body: one JSON object, or an SSE stream of data: lines."""
    content_type = response.headers.get("content-type", "")
    if content_type.startswith("text/event-stream"):
        messages, data = [], []
        for line in response.text.splitlines() + [""]:
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif not line and data:
                messages.append(json.loads("\n".join(data)))
                data = []
        return messages
    body = response.json()
    return body if isinstance(body, list) else [body]


async def check_replica(ctx: Ctx) -> None:
    if not ctx.url2:
        raise CheckFailed("replica", "a second URL (the other replica)", "none given")
    async with ctx.connect("legacy") as client:
        version = client.protocol_version
    check(
        not ctx.wire.session_ids,
        "the SDK's initialize on URL got no Mcp-Session-Id",
        "no Mcp-Session-Id response header",
        ctx.wire.session_ids,
    )

    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": CLIENT_INFO.model_dump(mode="json"),
        },
    }
    response = await ctx.raw_post(ctx.url, initialize)
    check(
        response.status_code == 200, f"a raw initialize on URL is answered {response.status_code}", "200", response.text
    )
    check(
        SESSION_HEADER not in response.headers,
        "a raw initialize on URL carries no Mcp-Session-Id",
        "no Mcp-Session-Id header",
        dict(response.headers),
    )

    what = f"a raw tools/call search on URL2 ({ctx.url2}), no session and no initialize there"
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "books a customer ordered"}},
    }
    response = await ctx.raw_post(ctx.url2, call, {"MCP-Protocol-Version": version})
    check(response.status_code == 200, f"{what} is answered 200", "200", f"{response.status_code}: {response.text}")
    try:
        answers = [m for m in rpc_messages(response) if m.get("id") == 2]
    except ValueError:
        raise CheckFailed(what, "a JSON or SSE body of JSON-RPC messages", response.text) from None
    if not answers or "result" not in answers[0]:
        raise CheckFailed(what, "a JSON-RPC result for id 2", response.text)
    result = CallToolResult.model_validate(answers[0]["result"])
    page = parse_search(expect_success(result, what), what)
    check("Customer.orders" in page.hits, f"{what} lists Customer.orders", "Customer.orders among the hits", page.hits)


async def check_prompts(ctx: Ctx) -> None:
    """prompts/list shows what the tenant may see; prompts/get fills the arguments in."""
    staff = ctx.tenant == "staff"
    async with ctx.connect() as client:
        listed = await client.list_prompts()
        names = sorted(p.name for p in listed.prompts)
        expected = ["find-a-book", "moderate-reviews"] if staff else ["find-a-book"]
        check(names == expected, f"prompts/list (tenant {ctx.tenant})", str(expected), names)
        find = next(p for p in listed.prompts if p.name == "find-a-book")
        arguments = {a.name: a.required for a in find.arguments or []}
        check(arguments == {"words": True, "format": False}, "find-a-book's arguments", "words required, format not", arguments)

        got = await client.get_prompt("find-a-book", {"words": "Le Guin", "format": "EBOOK"})
        text = got.messages[0].content.text
        check(
            'matching "Le Guin"' in text and "sold as EBOOK" in text and "{{" not in text,
            "prompts/get find-a-book fills both arguments in",
            "the words and the format in the text",
            text,
        )
        check(got.messages[0].role == "user", "the prompt is a user message", "user", got.messages[0].role)

        try:
            await client.get_prompt("find-a-book", {})
            raise CheckFailed("prompts/get without a required argument", "an error", "a prompt")
        except MCPError as e:
            check("words" in e.message, "a missing argument is named", "`words` in the message", e.message)

        try:
            await client.get_prompt("moderate-reviews", {"isbn": "978-0"})
            check(staff, "moderate-reviews is staff's", "an error for other tenants", "a prompt")
        except MCPError as e:
            check(
                not staff and "unknown prompt" in e.message,
                f"moderate-reviews is unknown to tenant {ctx.tenant}",
                "unknown prompt",
                e.message,
            )


CHECKS: dict[str, Callable[[Ctx], Awaitable[None]]] = {
    "tools": check_tools,
    "search": check_search,
    "introspect": check_introspect,
    "validate": check_validate,
    "execute": check_execute,
    "contract": check_contract,
    "contract-staff": check_contract_staff,
    "errors": check_errors,
    "replica": check_replica,
    "prompts": check_prompts,
}
ALL = ["tools", "search", "introspect", "validate", "execute", "errors"]


# --- Running.


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, which anyio's task groups raise."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def run(names: list[str], ctx: Ctx) -> None:
    for name in names:
        print(f"== {name}", flush=True)
        ctx.current = name
        ctx.wire = Wire(ctx.tenant)
        await CHECKS[name](ctx)
        ctx.wire.report()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 1)[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("check", metavar="CHECK", choices=[*CHECKS, "all"], help="the check to run")
    parser.add_argument("url", metavar="URL", help="the MCP endpoint, e.g. http://127.0.0.1:4000/mcp")
    parser.add_argument("url2", metavar="URL2", nargs="?", help="a second replica's endpoint (for `replica`)")
    parser.add_argument("--tenant", metavar="NAME", help=f"send `{TENANT_HEADER}: NAME` on every request")
    parser.add_argument(
        "--mode",
        choices=sorted(MODES),
        help="protocol mode (default: both legacy and modern for `tools`, auto for the rest)",
    )
    parser.add_argument("--timeout", type=float, default=30.0, metavar="S", help="per-request timeout (default 30)")
    args = parser.parse_args(argv)
    if args.check == "replica" and not args.url2:
        parser.error("replica needs URL2, the second replica's endpoint")
    if args.check != "replica" and args.url2:
        parser.error(f"URL2 is only for replica, not {args.check}")

    names = ALL if args.check == "all" else [args.check]
    ctx = Ctx(args.url, args.url2, args.tenant, args.mode, args.timeout)
    try:
        anyio.run(run, names, ctx)
    except BaseException as error:  # noqa: BLE001 - sorted below into failures, unreachable and bugs
        found = leaves(error)
        failed = next((e for e in found if isinstance(e, CheckFailed)), None)
        if failed is not None:
            print(
                f"FAIL ({ctx.current}) {failed.what}\n  expected: {failed.expected}\n  got:      {show(failed.got)}",
                file=sys.stderr,
            )
            return 1
        unreachable = next((e for e in found if isinstance(e, Unreachable | httpx2.TransportError | OSError)), None)
        if unreachable is not None:
            where = " or ".join(u for u in (args.url, args.url2) if u)
            detail = str(unreachable) or f"no answer within {args.timeout:g} s"
            print(
                f"FAIL ({ctx.current}) cannot talk MCP to {where}: {type(unreachable).__name__}: {detail}",
                file=sys.stderr,
            )
            return 3
        if isinstance(error, KeyboardInterrupt):
            raise
        invalid = next((e for e in found if isinstance(e, ValidationError)), None)
        if invalid is not None:
            print(
                f"FAIL ({ctx.current}) the server's answer does not fit the MCP schema of the negotiated protocol "
                f"(the SDK checks results per protocol version; 2026-07-28 results need resultType, and "
                f"tools/list and server/discover also cacheScope and ttlMs):\n{invalid}",
                file=sys.stderr,
            )
            return 1
        mcp_error = next((e for e in found if isinstance(e, MCPError)), None)
        if mcp_error is not None:
            print(
                f"FAIL ({ctx.current}) unexpected MCP error {mcp_error.code}: {mcp_error.message}"
                f" (data: {show(mcp_error.data)})",
                file=sys.stderr,
            )
            return 1
        raise
    print(f"passed: {', '.join(names)}" + (f" (tenant {args.tenant})" if args.tenant else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
