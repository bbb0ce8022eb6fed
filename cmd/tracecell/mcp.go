package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tracecell/tracecell/config"
	"github.com/tracecell/tracecell/mcpserver"
	"github.com/tracecell/tracecell/server"
)

// defaultMCPListen is where `tracecell mcp` listens without --listen.
const defaultMCPListen = "127.0.0.1:8765"

// mcpCommand is `tracecell mcp`: the MCP server (package mcpserver) over
// the session server.
func mcpCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve a stateful Python tool over MCP (SSE at /sse, Streamable HTTP at /mcp), e.g. for vllm serve --tool-server",
		Flags: mcpFlags(),
		Action: func(c *cli.Context) error {
			return mcpAction(c, stderr)
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return &exitError{statusFailed, fmt.Errorf("%v (see tracecell mcp --help)", err)}
		},
	}
}

// mcpFlags are serve's flags (TCP only) plus the MCP result caps.
func mcpFlags() []cli.Flag {
	var fl []cli.Flag
	for _, f := range serveFlags() {
		if f.Names()[0] == "listen" {
			f = &cli.StringFlag{Name: "listen", Value: defaultMCPListen, Usage: "`HOST:PORT` to listen on (loopback unless --allow-remote)"}
		}
		fl = append(fl, f)
	}
	return fastNames(append(fl,
		&cli.StringFlag{Name: "max-image-size", Value: "1M", Usage: "largest image (`SIZE`) returned inline as MCP image content; larger ones are named in the text"},
		&cli.IntFlag{Name: "max-result-chars", Value: mcpserver.DefaultMaxChars, Usage: "cap on the text of one tool result (`N` characters)"},
	))
}

func mcpAction(c *cli.Context, stderr io.Writer) error {
	fail := func(err error) error { return &exitError{statusFailed, err} }
	if strings.HasPrefix(c.String("listen"), "unix:") {
		return fail(fmt.Errorf("--listen %s: MCP clients such as vLLM connect over TCP; use 127.0.0.1:PORT", c.String("listen")))
	}
	o, err := serverOptions(c, stderr, "mcp")
	if err != nil {
		return err
	}
	img, err := config.ParseSize(c.String("max-image-size"))
	if err != nil || img == 0 {
		return fail(fmt.Errorf("--max-image-size %q: want a size above 0, e.g. 1M", c.String("max-image-size")))
	}
	if c.Int("max-result-chars") < 1000 {
		return fail(fmt.Errorf("--max-result-chars %d: want 1000 or more", c.Int("max-result-chars")))
	}
	o.Name = "tracecell mcp"
	o.Handler = func(s *server.Server) (http.Handler, error) {
		m, err := mcpserver.New(mcpserver.Options{
			Server: s, Log: o.Log, Version: Version,
			MaxChars: c.Int("max-result-chars"), MaxImageBytes: int64(img),
		})
		if err != nil {
			return nil, err
		}
		return m.Handler(), nil
	}
	return runServer(o)
}
