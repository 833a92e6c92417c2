package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineSession serves a project over LineTransport on pipes and returns a
// function that sends one line and reads the next line of output.
func lineSession(t *testing.T) (send func(line string), recv func() map[string]any, closeIn func()) {
	send, recvLine, closeIn := lineSessionLines(t)
	recv = func() map[string]any {
		t.Helper()
		line := recvLine()
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		return m
	}
	return send, recv, closeIn
}

// lineSessionLines is lineSession, reading lines as they are.
func lineSessionLines(t *testing.T) (send func(line string), recvLine func() []byte, closeIn func()) {
	dir := repo(t)
	srv, err := New(Options{Root: dir, WorkDir: dir, Watch: -1})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), &LineTransport{In: inR, Out: outW}); outW.Close() }()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the server did not end at end of input")
		}
	})
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send = func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	recvLine = func() []byte {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("no more output: %v", lines.Err())
		}
		return bytes.Clone(lines.Bytes())
	}
	return send, recvLine, func() { inW.Close() }
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// A line that is not a message is answered with -32700 or -32600 and the
// session goes on; the SDK's stdio transport would end it.
func TestLineTransportSurvivesBadLines(t *testing.T) {
	t.Parallel()
	send, recv, _ := lineSession(t)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := recv(); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize = %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, c := range []struct {
		line string
		code float64
	}{
		{"this is not json", jsonrpc.CodeParseError},
		{`{"jsonrpc":"2.0","id":2,"method":`, jsonrpc.CodeParseError},
		{`[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, jsonrpc.CodeInvalidRequest},
		{`{"id":4,"method":"ping"}`, jsonrpc.CodeInvalidRequest},
		{`"just a string"`, jsonrpc.CodeInvalidRequest},
	} {
		send(c.line)
		m := recv()
		if errCode(m) != c.code || m["id"] != nil {
			t.Errorf("%q answered %v, want error %v with id null", c.line, m, c.code)
		}
	}
	send("") // blank lines are skipped, not answered
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"packets","arguments":{"limit":"many"}}}`)
	if m := recv(); m["id"] != float64(5) || m["result"].(map[string]any)["isError"] != true {
		t.Errorf("a bad argument = %v, want an isError result", m)
	}
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"packets","arguments":{}}}`)
	if m := recv(); m["id"] != float64(6) || m["result"].(map[string]any)["isError"] == true {
		t.Errorf("packets after bad lines = %v", m)
	}
	send(`{"jsonrpc":"2.0","id":7,"method":"no/such"}`)
	if m := recv(); m["id"] != float64(7) || errCode(m) != jsonrpc.CodeMethodNotFound {
		t.Errorf("an unknown method = %v", m)
	}
}

// On protocol 2025-03-26, the one revision with batches, a batch is taken
// and answered with one array; on any other it is refused as before.
func TestLineTransportBatches(t *testing.T) {
	t.Parallel()
	send, recvLine, _ := lineSessionLines(t)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	var init struct {
		Result struct{ ProtocolVersion string }
	}
	if err := json.Unmarshal(recvLine(), &init); err != nil || init.Result.ProtocolVersion != "2025-03-26" {
		t.Fatalf("initialize on 2025-03-26 = %+v, %v", init, err)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	send(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},` +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"packets","arguments":{}}},42,` +
		`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	var answers []map[string]any
	line := recvLine()
	if err := json.Unmarshal(line, &answers); err != nil {
		t.Fatalf("a batch was answered with %s, want one array: %v", line, err)
	}
	got := map[string]int{}
	for _, a := range answers {
		switch {
		case a["id"] == float64(2) && a["result"] != nil:
			got["ping"]++
		case a["id"] == float64(3) && a["result"] != nil:
			got["packets"]++
		case a["id"] == nil && errCode(a) == jsonrpc.CodeInvalidRequest:
			got["invalid"]++ // 42, initialize in a batch, the second id 2
		default:
			t.Errorf("unexpected answer %v", a)
		}
	}
	if want := map[string]int{"ping": 1, "packets": 1, "invalid": 3}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batch answers = %v, want %v:\n%s", got, want, line)
	}

	// Notifications only: no answer at all; an empty batch: one error.
	send(`[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`)
	send(`[]`)
	var m map[string]any
	if err := json.Unmarshal(recvLine(), &m); err != nil || errCode(m) != jsonrpc.CodeInvalidRequest {
		t.Errorf("an empty batch = %v, %v", m, err)
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if err := json.Unmarshal(recvLine(), &m); err != nil || m["id"] != float64(5) {
		t.Errorf("a ping after the batches = %v, %v", m, err)
	}
}

// At end of input the calls already read are still answered.
func TestLineTransportAnswersBeforeEOF(t *testing.T) {
	t.Parallel()
	send, recv, closeIn := lineSession(t)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"handoff","arguments":{"purpose":"at the end"}}}`)
	closeIn()
	seen := map[float64]bool{}
	for range 2 {
		seen[recv()["id"].(float64)] = true
	}
	if !seen[1] || !seen[2] {
		t.Errorf("answers before EOF: %v", seen)
	}
}

// FuzzDecodeLine: every line gets exactly one outcome, the right one: a
// message that re-encodes to the same method and id, -32700 for what is
// not JSON, -32600 for JSON that is not one message.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}`,
		`[1]`, `{}`, `nul`, `{"jsonrpc":"2.0","id":1.5,"method":"p"}`, "\xff", `{"jsonrpc":"1.0","id":1,"method":"p"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, rpcErr := decode(line, false)
		if (msg == nil) == (rpcErr == nil) {
			t.Fatalf("decode(%q) = %v, %v: want exactly one", line, msg, rpcErr)
		}
		if !json.Valid(line) {
			if rpcErr == nil || rpcErr.Code != jsonrpc.CodeParseError {
				t.Fatalf("decode(%q) of invalid JSON = %v, %v", line, msg, rpcErr)
			}
			return
		}
		if rpcErr != nil {
			if rpcErr.Code != jsonrpc.CodeInvalidRequest {
				t.Fatalf("decode(%q) of valid JSON gave code %d", line, rpcErr.Code)
			}
			return
		}
		if bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
			t.Fatalf("decode(%q) accepted a batch", line)
		}
		enc, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			t.Fatalf("re-encode %q: %v", line, err)
		}
		again, err := jsonrpc.DecodeMessage(enc)
		if err != nil {
			t.Fatalf("decode of re-encoded %q: %v", enc, err)
		}
		if req, ok := msg.(*jsonrpc.Request); ok {
			r2 := again.(*jsonrpc.Request)
			if r2.Method != req.Method || r2.ID != req.ID {
				t.Fatalf("%q: method/id %q/%v became %q/%v", line, req.Method, req.ID, r2.Method, r2.ID)
			}
		}
	})
}

// FuzzDecodeBatch: a batch line gives one outcome per element (a message,
// or the error that answers it), never an initialize; an empty batch or
// one that is no array is one error.
func FuzzDecodeBatch(f *testing.F) {
	for _, s := range []string{`[{"jsonrpc":"2.0","id":1,"method":"ping"},42]`, `[]`, `[[]]`, `["x",{}]`,
		`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, `[{"jsonrpc":"2.0","method":"n"}]`, `["a"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !isArray(line) || !json.Valid(line) {
			return
		}
		msgs, bad, rpcErr := decodeBatch(line)
		var elems []json.RawMessage
		if json.Unmarshal(line, &elems) != nil || len(elems) == 0 {
			if rpcErr == nil || rpcErr.Code != jsonrpc.CodeInvalidRequest || msgs != nil || bad != nil {
				t.Fatalf("decodeBatch(%q) = %v, %v, %v: want one -32600", line, msgs, bad, rpcErr)
			}
			return
		}
		if rpcErr != nil || len(msgs)+len(bad) != len(elems) {
			t.Fatalf("decodeBatch(%q) = %d messages, %d errors, %v for %d elements", line, len(msgs), len(bad), rpcErr, len(elems))
		}
		for _, m := range msgs {
			if req, ok := m.(*jsonrpc.Request); ok && (req.Method == "initialize" || req.Method == "") {
				t.Fatalf("decodeBatch(%q) let through %q", line, req.Method)
			}
		}
		for _, e := range bad {
			if e.Code != jsonrpc.CodeInvalidRequest {
				t.Fatalf("decodeBatch(%q): an element answered with %d", line, e.Code)
			}
		}
	})
}

// FuzzReadLine: lines come back as written, however the input is split,
// and an over-long line is flagged instead of buffered.
func FuzzReadLine(f *testing.F) {
	f.Add("a\nb\n\nc", 3)
	f.Add("", 1)
	f.Add("\r\n\n", 2)
	f.Fuzz(func(t *testing.T, input string, chunk int) {
		if chunk <= 0 || chunk > 64 {
			chunk = 1
		}
		if strings.Contains(input, "\r") {
			return // ReadLine also drops a \r before \n; compared separately below
		}
		r := bufio.NewReaderSize(iotest(input, chunk), 16)
		var got []string
		for {
			line, tooLong, err := readLine(r)
			if tooLong {
				t.Fatalf("a line of %d bytes flagged as too long", len(line))
			}
			if err != nil {
				if len(line) > 0 {
					got = append(got, string(line))
				}
				break
			}
			got = append(got, string(line))
		}
		want := strings.Split(input, "\n")
		if n := len(want); n > 0 && want[n-1] == "" {
			want = want[:n-1]
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != len(want) {
			t.Fatalf("readLine(%q) = %q, want %q", input, got, want)
		}
	})
}

func asWire(err error, target **jsonrpc.Error) bool { return errors.As(err, target) }

// iotest returns a reader that gives input n bytes at a time.
func iotest(input string, n int) io.Reader {
	return &chunked{s: input, n: n}
}

type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.s))
	copy(p, c.s[:k])
	c.s = c.s[k:]
	return k, nil
}

// FuzzToolArguments: no argument object, however malformed, kills the
// server or escapes the result: each call ends in a tool result or an
// invalid-params error, and the session answers the next call.
func FuzzToolArguments(f *testing.F) {
	for _, s := range []string{`{}`, `{"purpose":"x","files":["../../etc/passwd"]}`, `{"packet":"../../x"}`, `{"limit":-1}`,
		`{"paths":[""],"missing_ok":true}`, `{"prompt":"x","max_iterations":1e99}`, `{"pr":"#0"}`, `{"issue":"https://github.com/o/r/issues/1"}`,
		`null`, `[]`, `{"budget_bytes":1}`, `{"loop":"*"}`} {
		for i := range allTools {
			f.Add(uint8(i), []byte(s))
		}
	}
	dir := repo(f)
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		_, cs := connect(t, Options{Root: dir, WorkDir: dir}, nil)
		name := allTools[int(which)%len(allTools)].name
		if !json.Valid(args) {
			return // the SDK client would not send it; the transport test covers bad JSON
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			var werr *jsonrpc.Error
			if !asWire(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("%s %s: %v", name, args, err)
			}
		} else if res.IsError && (len(res.Content) == 0 || res.Content[0].(*sdk.TextContent).Text == "") {
			t.Fatalf("%s %s: an error result with no message", name, args)
		}
		if err := cs.Ping(ctx, nil); err != nil {
			t.Fatalf("the session died after %s %s: %v", name, args, err)
		}
	})
}
