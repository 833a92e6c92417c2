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

// ResponsesRequest is what the scripted model reads of an OpenAI
// Responses API request (Codex CLI's wire API).
type ResponsesRequest struct {
	Model string            `json:"model"`
	Input []json.RawMessage `json:"input"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	Raw string `json:"-"`
}

// ToolNames lists the names of the tools the request offers.
func (r *ResponsesRequest) ToolNames() []string {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	return names
}

// FunctionOutputs returns the outputs of the function calls in the input.
func (r *ResponsesRequest) FunctionOutputs() []string {
	var out []string
	for _, raw := range r.Input {
		var item struct {
			Type   string          `json:"type"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(raw, &item) == nil && item.Type == "function_call_output" {
			var s string
			if json.Unmarshal(item.Output, &s) == nil {
				out = append(out, s)
			} else {
				out = append(out, string(item.Output))
			}
		}
	}
	return out
}

// LastUserText is the text of the last user item of the input.
func (r *ResponsesRequest) LastUserText() string {
	for i := len(r.Input) - 1; i >= 0; i-- {
		var item struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(r.Input[i], &item) != nil || item.Role != "user" {
			continue
		}
		var b strings.Builder
		for _, c := range item.Content {
			b.WriteString(c.Text)
		}
		return b.String()
	}
	return ""
}

// ResponsesServer serves POST /v1/responses as server-sent events from a
// script: a text answer, or a function call (Reply.ToolName).
type ResponsesServer struct {
	URL string

	mu       sync.Mutex
	requests []ResponsesRequest
}

// Requests returns every request served so far.
func (s *ResponsesServer) Requests() []ResponsesRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ResponsesRequest(nil), s.requests...)
}

// NewResponsesServer starts the scripted model on 127.0.0.1, answering
// text only; URL ends in /v1.
func NewResponsesServer(t testing.TB, decide func(*ResponsesRequest) string) *ResponsesServer {
	return NewResponsesToolServer(t, func(r *ResponsesRequest) Reply { return Reply{Text: decide(r)} })
}

// NewResponsesToolServer starts the scripted model on 127.0.0.1; decide
// answers with text or a function call. URL ends in /v1.
func NewResponsesToolServer(t testing.TB, decide func(*ResponsesRequest) Reply) *ResponsesServer {
	s := &ResponsesServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		var req ResponsesRequest
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
		id := fmt.Sprintf("resp_%03d", n)
		w.Header().Set("Content-Type", "text/event-stream")
		flusher, _ := w.(http.Flusher)
		event := func(name string, data map[string]any) {
			data["type"] = name
			b, _ := json.Marshal(data)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
			if flusher != nil {
				flusher.Flush()
			}
		}
		event("response.created", map[string]any{"response": map[string]any{"id": id, "status": "in_progress"}})
		var item map[string]any
		if reply.Item != nil {
			item = reply.Item
			event("response.output_item.added", map[string]any{"output_index": 0, "item": item})
		} else if reply.ToolName != "" {
			args, _ := json.Marshal(reply.ToolInput)
			if reply.ToolInput == nil {
				args = []byte("{}")
			}
			item = map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id, "name": reply.ToolName, "arguments": string(args), "status": "completed"}
			event("response.output_item.added", map[string]any{"output_index": 0, "item": item})
		} else {
			item = map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}}
			event("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "in_progress", "content": []any{}}})
			event("response.output_text.delta", map[string]any{"output_index": 0, "content_index": 0, "item_id": "msg_" + id, "delta": reply.Text})
		}
		event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
		event("response.completed", map[string]any{"response": map[string]any{"id": id, "status": "completed", "output": []any{item},
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}})
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/v1"
	return s
}
