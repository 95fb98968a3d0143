"""`haiku mcp`: the selected databases as a Model Context Protocol server for agents and editors.

`tools` holds what each tool does (no MCP SDK needed), `server` registers them with the SDK, and
`transport` serves them over stdio or streamable HTTP.
"""
