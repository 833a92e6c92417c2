package harnesstest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// AnthropicRequest is what the scripted model reads of a Messages API
// request.
type AnthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	// Raw is the whole body, for assertions on what the harness sent.
	Raw string `json:"-"`
}

// HasTool reports whether the request offers the tool.
func (r *AnthropicRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// LastUserText is the text of the last user turn: its text blocks, and the
// contents of its tool results.
func (r *AnthropicRequest) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s
		}
		var blocks []struct {
			Type    string          `json:"type"`
			Text    string          `json:"text"`
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(m.Content, &blocks)
		var b strings.Builder
		for _, bl := range blocks {
			b.WriteString(bl.Text)
			if bl.Type == "tool_result" {
				b.WriteString("[tool_result]")
				b.Write(bl.Content)
			}
			b.WriteByte('\n')
		}
		return b.String()
	}
	return ""
}

// Reply is one scripted answer: text, or a tool call.
type Reply struct {
	Text      string
	ToolName  string
	ToolInput map[string]any
	// Item is a Responses API output item sent as is (a tool_search_call,
	// say); it wins over Text and ToolName there.
	Item map[string]any
}

// AnthropicServer serves POST /v1/messages from a script: decide is called
// with every request and returns the answer, streamed or not as asked.
type AnthropicServer struct {
	URL string

	mu       sync.Mutex
	requests []AnthropicRequest
}

// Requests returns every request served so far.
func (s *AnthropicServer) Requests() []AnthropicRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]AnthropicRequest(nil), s.requests...)
}

// NewAnthropicServer starts the scripted model on 127.0.0.1.
func NewAnthropicServer(t testing.TB, decide func(*AnthropicRequest) Reply) *AnthropicServer {
	s := &AnthropicServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		var req AnthropicRequest
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Raw = string(body)
		s.mu.Lock()
		s.requests = append(s.requests, req)
		n := len(s.requests)
		s.mu.Unlock()
		reply := decide(&req)
		id := fmt.Sprintf("msg_%03d", n)
		if !req.Stream {
			writeMessage(w, id, req.Model, reply)
			return
		}
		streamMessage(w, id, req.Model, reply)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func content(id string, r Reply) (block map[string]any, stop string) {
	if r.ToolName != "" {
		return map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": r.ToolName, "input": r.ToolInput}, "tool_use"
	}
	return map[string]any{"type": "text", "text": r.Text}, "end_turn"
}

func writeMessage(w http.ResponseWriter, id, model string, r Reply) {
	block, stop := content(id, r)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{block},
		"stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
	})
}

func streamMessage(w http.ResponseWriter, id, model string, r Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	event := func(name string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	block, stop := content(id, r)
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	if r.ToolName != "" {
		input, _ := json.Marshal(r.ToolInput)
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": r.ToolName, "input": map[string]any{}}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": r.Text}})
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	event("message_stop", map[string]any{"type": "message_stop"})
}
