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
// transport ends the session at the first such line. A batch (a JSON
// array of messages on one line) is taken when protocol 2025-03-26, the
// one revision that has batches, was negotiated, and answered with one
// array line.
type LineTransport struct {
	In  io.Reader
	Out io.Writer
}

// Connect implements the SDK's Transport.
func (t *LineTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{out: t.Out, incoming: make(chan readResult), closed: make(chan struct{}), pending: map[any]bool{}, batchOf: map[any]*batch{},
		answered: make(chan struct{}, 1)}
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
	// batchOf maps each call that came in a batch to its batch.
	batchOf map[any]*batch
	// initID is the initialize call's id, and version the protocol
	// revision the server answered it with.
	initID  any
	version string
}

// batchVersion is the one protocol revision with JSON-RPC batches: 2025-06-18
// removed them again.
const batchVersion = "2025-03-26"

// batch is a batch of calls being answered: the answers are written as one
// array once the last call is answered.
type batch struct {
	waiting int               // calls not answered yet
	answers []json.RawMessage // answers so far, errors for bad elements first
}

// readLoop reads lines until EOF, answering the ones that are not
// messages itself.
func (c *lineConn) readLoop(in io.Reader) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		if !tooLong && isArray(line) && json.Valid(line) && c.batchesAllowed() {
			if !c.readBatch(line) {
				return
			}
		} else if len(bytes.TrimSpace(line)) > 0 || tooLong {
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

// batchesAllowed says whether the negotiated protocol has batches.
func (c *lineConn) batchesAllowed() bool {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	return c.version == batchVersion
}

// readBatch hands a batch's messages on, one by one, and answers its bad
// elements; it reports false when the connection has closed.
func (c *lineConn) readBatch(line []byte) bool {
	msgs, bad, rpcErr := decodeBatch(line)
	if rpcErr != nil {
		c.writeError(rpcErr)
		return true
	}
	b := &batch{}
	for _, e := range bad {
		b.answers = append(b.answers, errorLine(e))
	}
	c.pendingMu.Lock()
	kept := msgs[:0]
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			id := req.ID.Raw()
			if _, inFlight := c.pending[id]; inFlight || c.batchOf[id] != nil {
				// One answer per id: a second call with it could never
				// be told apart.
				b.answers = append(b.answers, errorLine(&jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("Invalid Request: id %v is already in use", id)}))
				continue
			}
			b.waiting++
			c.batchOf[id] = b
		}
		kept = append(kept, m)
	}
	msgs = kept
	c.pendingMu.Unlock()
	if b.waiting == 0 && len(b.answers) > 0 {
		c.writeBatch(b.answers) // only notifications and bad elements: nothing more will come
	}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok {
			c.track(req)
		}
		if !c.deliver(readResult{msg: m}) {
			return false
		}
	}
	return true
}

// track notes a call in flight, or a cancellation of one.
func (c *lineConn) track(req *jsonrpc.Request) {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	if req.IsCall() {
		c.pending[req.ID.Raw()] = false
		if req.Method == "initialize" {
			c.initID = req.ID.Raw()
		}
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
	if isArray(line) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: a batch is taken only on protocol " + batchVersion + ", the one revision that has batches; send one message per line"}
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

func isArray(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) > 0 && t[0] == '['
}

// decodeBatch reads a batch line (valid JSON starting with '['): the
// messages in it, and the errors that answer its elements that are not
// messages, in order. An empty batch, or one that is not an array, is one
// error for the whole line.
func decodeBatch(line []byte) (msgs []jsonrpc.Message, bad []*jsonrpc.Error, rpcErr *jsonrpc.Error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(line, &elems); err != nil {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: a batch is an array of messages"}
	}
	if len(elems) == 0 {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: an empty batch"}
	}
	for _, e := range elems {
		msg, err := decode(e, false)
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" {
			msg, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: initialize cannot be part of a batch"}
		}
		if err != nil {
			bad = append(bad, err)
			continue
		}
		msgs = append(msgs, msg)
	}
	return msgs, bad, nil
}

// errorLine is the response to an unreadable message. Its id cannot be
// known, so it is null, as JSON-RPC 2.0 says.
func errorLine(e *jsonrpc.Error) json.RawMessage {
	b, _ := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", nil, e})
	return b
}

// writeError answers an unreadable line.
func (c *lineConn) writeError(e *jsonrpc.Error) { c.writeLine(errorLine(e)) }

// writeBatch writes a batch's answers as one array line.
func (c *lineConn) writeBatch(answers []json.RawMessage) error {
	b, err := json.Marshal(answers)
	if err != nil {
		return fmt.Errorf("encode batch answers: %w", err)
	}
	return c.writeLine(b)
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
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.writeLine(b)
	}
	id := resp.ID.Raw()
	c.pendingMu.Lock()
	cancelled := c.pending[id]
	bt := c.batchOf[id]
	delete(c.batchOf, id)
	if c.initID != nil && id == c.initID {
		var init struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if resp.Error == nil && json.Unmarshal(resp.Result, &init) == nil {
			c.version = init.ProtocolVersion
		}
	}
	var answers []json.RawMessage // a batch's, when this was its last call
	if bt != nil {
		if !cancelled {
			bt.answers = append(bt.answers, b)
		}
		if bt.waiting--; bt.waiting == 0 {
			answers = bt.answers
		}
	}
	c.pendingMu.Unlock()

	switch {
	case bt != nil && len(answers) > 0:
		err = c.writeBatch(answers)
	case bt == nil && !cancelled:
		err = c.writeLine(b)
	}
	// Forget the call only once its answer is out, so that end of input
	// waits for it.
	c.pendingMu.Lock()
	delete(c.pending, id)
	c.pendingMu.Unlock()
	select {
	case c.answered <- struct{}{}:
	default:
	}
	return err
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
