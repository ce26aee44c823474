// Package servertools is llama-server's built-in tools for AI agents
// (--tools): read_file, file_glob_search, grep_search,
// exec_shell_command, write_file, edit_file and get_info, which a web UI
// or an agent calls through POST /tools {"tool": NAME, "params": {...}}.
//
// A Set holds the enabled tools (none unless --tools names them: they
// read, write and run anything the server's account can). Each call runs
// against an Env: the working directory relative paths resolve against
// (the x-tool-cwd header; default the server's), and the runtime the
// tool's I/O goes through: the host, or an isolate named as llama-server
// names one (docker-container:ID, podman-container:ID, ssh:TARGET), where
// every file operation is a POSIX command run by `docker exec` or `ssh`.
//
// Every tool has llama-server's limits: output sizes, result counts,
// timeouts. A tool's own failure (a file that is not there, an edit that
// does not match) is a result {"error": "..."}, as llama-server answers
// it; Call returns an error only for a request it cannot run: an unknown
// tool (ErrUnknownTool), bad parameters (ErrBadParams), or a runtime that
// cannot be used.
//
// MCP servers (--mcp-servers-config, --mcp-servers-json; mcp.go) add
// their tools to a Set as SERVER_TOOL (WithMCP). An MCP holds one client
// per server: a process in a group of its own speaking JSON-RPC 2.0 over
// its stdin and stdout (mcpclient.go, goroutines around the pure
// message code of mcprpc.go), started and listed at Warm, started again
// after it exits, stopped at Close.
package servertools
