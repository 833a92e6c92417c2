package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one JSON-RPC message on stdio; a longer line is
// answered with a parse error and skipped, not buffered.
const MaxLineBytes = 16 << 20

// LineTransport is newline-delimited JSON-RPC over a reader and a writer,
// like the SDK's stdio transport, except that a line that is not a
// JSON-RPC message gets an error response (-32700 for bad JSON, -32600
// for JSON that is no message) and the session goes on: the SDK's
// transport ends the session at the first such line.
type LineTransport struct {
	In  io.Reader
	Out io.Writer
}

// Connect implements the SDK's Transport.
func (t *LineTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{out: t.Out, incoming: make(chan readResult), closed: make(chan struct{}), pending: map[any]bool{}, answered: make(chan struct{}, 1)}
	if cl, ok := t.In.(io.Closer); ok {
		c.closeIn = cl
	}
	go c.readLoop(t.In)
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	out      io.Writer
	closeIn  io.Closer
	incoming chan readResult
	closed   chan struct{}

	writeMu   sync.Mutex
	closeOnce sync.Once

	// pending counts calls read but not yet answered: at end of input the
	// session ends only once they are, so `printf … | baton mcp` gets its
	// answers.
	pendingMu sync.Mutex
	// pending maps each call in flight to whether the client cancelled it:
	// a cancelled call gets no answer, as MCP asks.
	pending  map[any]bool
	answered chan struct{} // signalled when pending may have emptied
}

// readLoop reads lines until EOF, answering the ones that are not
// messages itself.
func (c *lineConn) readLoop(in io.Reader) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			if msg, rpcErr := decode(line, tooLong); rpcErr != nil {
				c.writeError(rpcErr)
			} else {
				if req, ok := msg.(*jsonrpc.Request); ok {
					c.track(req)
				}
				if !c.deliver(readResult{msg: msg}) {
					return
				}
			}
		}
		if err != nil {
			c.drain()
			c.deliver(readResult{err: err})
			return
		}
	}
}

// track notes a call in flight, or a cancellation of one.
func (c *lineConn) track(req *jsonrpc.Request) {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	if req.IsCall() {
		c.pending[req.ID.Raw()] = false
		return
	}
	if req.Method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	var id any
	if json.Unmarshal(p.RequestID, &id) != nil {
		return
	}
	if f, ok := id.(float64); ok && f == float64(int64(f)) {
		id = int64(f) // ids decode as int64 in the SDK
	}
	if _, inFlight := c.pending[id]; inFlight {
		c.pending[id] = true
	}
}

// maxDrain bounds how long the end of input waits for calls in flight.
const maxDrain = 30 * time.Second

// drain waits until every call read has been answered, or maxDrain.
func (c *lineConn) drain() {
	deadline := time.After(maxDrain)
	for {
		c.pendingMu.Lock()
		n := len(c.pending)
		c.pendingMu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-deadline:
			return
		case <-c.closed:
			return
		}
	}
}

func (c *lineConn) deliver(r readResult) bool {
	select {
	case c.incoming <- r:
		return true
	case <-c.closed:
		return false
	}
}

// readLine returns the next line without its newline; tooLong is set (and
// the rest of the line discarded) when it exceeds MaxLineBytes.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, isPrefix, err := r.ReadLine()
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > MaxLineBytes {
				tooLong, line = true, nil
			}
		}
		if err != nil || !isPrefix {
			return line, tooLong, err
		}
	}
}

// decode turns a line into a message, or the error to answer it with.
func decode(line []byte, tooLong bool) (jsonrpc.Message, *jsonrpc.Error) {
	if tooLong {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: fmt.Sprintf("Parse error: the line is over %d bytes", MaxLineBytes)}
	}
	if !json.Valid(line) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "Parse error: the line is not JSON; send one JSON-RPC message per line"}
	}
	if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '[' {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: batches are not supported; send one message per line"}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: " + err.Error()}
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: the method is empty"}
	}
	return msg, nil
}

// writeError answers an unreadable line. Its id cannot be known, so it is
// null, as JSON-RPC 2.0 says.
func (c *lineConn) writeError(e *jsonrpc.Error) {
	b, _ := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", nil, e})
	c.writeLine(b)
}

func (c *lineConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(b, '\n'))
	return err
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.pendingMu.Lock()
		cancelled := c.pending[resp.ID.Raw()]
		delete(c.pending, resp.ID.Raw())
		c.pendingMu.Unlock()
		select {
		case c.answered <- struct{}{}:
		default:
		}
		if cancelled {
			return nil
		}
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	return c.writeLine(b)
}

func (c *lineConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.closeIn != nil {
			err = c.closeIn.Close()
		}
	})
	if errors.Is(err, io.ErrClosedPipe) {
		err = nil
	}
	return err
}

func (c *lineConn) SessionID() string { return "" }
