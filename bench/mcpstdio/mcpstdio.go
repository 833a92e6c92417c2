// Package mcpstdio is the benchmarks' client of `baton mcp` over stdio:
// a fresh server, initialized as a client initializes it, and requests
// written one line each.
package mcpstdio

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// Server is one `baton mcp` over stdio.
type Server struct {
	Cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

// Start starts bin's MCP server in dir and initializes it, as client.
func Start(bin, dir, client string) (*Server, error) {
	c := exec.Command(bin, "mcp")
	c.Dir = dir
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	s := &Server{Cmd: c, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	if _, err := s.Request("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":`+strconv.Quote(client)+`,"version":"1"}}`); err != nil {
		s.Close()
		return nil, err
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Request sends one request and returns the line that answers it.
func (s *Server) Request(method, params string) (string, error) {
	s.id++
	if _, err := fmt.Fprintf(s.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", s.id, method, params); err != nil {
		return "", err
	}
	want := `"id":` + strconv.Itoa(s.id) + `,`
	for {
		line, err := s.out.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("%s: %w", method, err)
		}
		if strings.Contains(line, want) {
			return line, nil
		}
	}
}

// Failed reports whether an answer is an error: of the protocol, or of
// a tool.
func Failed(line string) bool {
	return strings.Contains(line, `"isError":true`) || strings.Contains(line, `"error":`)
}

// Close ends the server's input and waits for it to exit.
func (s *Server) Close() {
	s.in.Close()
	_ = s.Cmd.Wait()
}
