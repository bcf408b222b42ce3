"""Drive `ralph mcp` with the MCP Python SDK's own client, as an agent would.

argv: the server's program and its arguments. stdin: a JSON list of steps,
each {"list": true} (the tools, as listed) or {"call": NAME, "args": {...}}.
stdout: a JSON list, one result a step: the tools as JSON, or a call's
{"error": bool, "text": ...}.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    steps = json.load(sys.stdin)
    params = StdioServerParameters(
        command=sys.argv[1], args=sys.argv[2:], env=dict(os.environ), cwd=os.getcwd()
    )
    out = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for step in steps:
                if step.get("list"):
                    tools = await session.list_tools()
                    out.append([t.model_dump(mode="json", by_alias=True) for t in tools.tools])
                else:
                    r = await session.call_tool(step["call"], step.get("args") or {})
                    text = "".join(c.text for c in r.content if getattr(c, "type", "") == "text")
                    out.append({"error": bool(r.is_error), "text": text})
    json.dump(out, sys.stdout)


asyncio.run(main())
