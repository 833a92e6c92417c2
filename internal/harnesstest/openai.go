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

// ChatRequest is what the scripted model reads of an OpenAI chat
// completions request.
type ChatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Raw string `json:"-"`
}

// HasTool reports whether the request offers the tool.
func (r *ChatRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// ToolResults counts the tool results in the conversation.
func (r *ChatRequest) ToolResults() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "tool" {
			n++
		}
	}
	return n
}

// LastUserText is the text of the last user message.
func (r *ChatRequest) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(r.Messages[i].Content, &s) == nil {
			return s
		}
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(r.Messages[i].Content, &parts)
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// ChatServer serves POST /v1/chat/completions from a script.
type ChatServer struct {
	URL string

	mu       sync.Mutex
	requests []ChatRequest
}

// Requests returns every request served so far.
func (s *ChatServer) Requests() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChatRequest(nil), s.requests...)
}

// NewChatServer starts the scripted model on 127.0.0.1; URL ends in /v1.
func NewChatServer(t testing.TB, decide func(*ChatRequest) Reply) *ChatServer {
	s := &ChatServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		var req ChatRequest
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
		id := fmt.Sprintf("chatcmpl-%03d", n)
		w.Header().Set("Content-Type", "text/event-stream")
		flusher, _ := w.(http.Flusher)
		chunk := func(delta map[string]any, finish any) {
			b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1764000000, "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			if flusher != nil {
				flusher.Flush()
			}
		}
		if reply.ToolName != "" {
			args, _ := json.Marshal(reply.ToolInput)
			chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_" + id, "type": "function",
				"function": map[string]any{"name": reply.ToolName, "arguments": string(args)}}}}, nil)
			chunk(map[string]any{}, "tool_calls")
		} else {
			chunk(map[string]any{"role": "assistant", "content": reply.Text}, nil)
			chunk(map[string]any{}, "stop")
		}
		if strings.Contains(req.Raw, `"include_usage":true`) {
			// What the API sends last when asked: the usage, with no choices.
			b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1764000000, "model": req.Model,
				"choices": []any{}, "usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/v1"
	return s
}
