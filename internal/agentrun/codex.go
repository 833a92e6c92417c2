package agentrun

import (
	"cmp"
	"strings"
)

// codexDecoder reads codex exec --json events.
type codexDecoder struct {
	live     *liveView
	threadID string
	final    *string // text of the last completed agent_message
	usage    *codexUsage
	turns    int
	// completed: a turn.completed was seen. Codex also sends agent_message
	// items as commentary mid-turn, so the last one is the answer only
	// once the turn completed.
	completed bool
	failed    bool // a turn.failed was seen
	// errPending is an error event not followed by turn.completed. Codex
	// also reports recoverable trouble (reconnects) as error events, so an
	// error counts as fatal only when no turn completes after it.
	errPending bool
	errors     []string
	seen       map[string]bool // item ids already shown live
	tools      toolTally
	unknown    int
}

type codexEvent struct {
	Type     string      `json:"type"`
	ThreadID string      `json:"thread_id"`
	Usage    *codexUsage `json:"usage"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string     `json:"message"`
	Item    *codexItem `json:"item"`
}

type codexUsage struct {
	InputTokens       int64 `json:"input_tokens"` // includes cached tokens
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
}

type codexItem struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Text    string `json:"text"`
	Command string `json:"command"`
	// Output and ExitCode are a command's; ExitCode is null while it runs.
	Output   string `json:"aggregated_output"`
	ExitCode *int   `json:"exit_code"`
	// Status is in_progress, completed, failed or declined.
	Status  string `json:"status"`
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
	Query   string `json:"query"`
	Message string `json:"message"`
}

// failed reports whether Codex says the item did not do what was asked.
func (it *codexItem) failed() bool { return it.Status == "failed" || it.Status == "declined" }

func (d *codexDecoder) tooLong() { d.unknown++ }

func (d *codexDecoder) line(b []byte) {
	if len(b) == 0 {
		return
	}
	var ev codexEvent
	if err := unmarshalTolerant(b, &ev); err != nil {
		d.unknown++
		return
	}
	switch ev.Type {
	case "thread.started":
		if ev.ThreadID != "" {
			d.threadID = ev.ThreadID
		}
	case "turn.started", "item.plan.delta":
	case "turn.completed":
		d.turns++
		d.completed = true
		d.errPending = false
		if ev.Usage != nil {
			// usage is the thread's running total, so the last one wins.
			u := *ev.Usage
			d.usage = &u
		}
	case "turn.failed":
		d.turns++
		d.failed = true
		msg := "turn failed"
		if ev.Error != nil && ev.Error.Message != "" {
			msg = ev.Error.Message
		}
		d.addError(msg)
		d.live.note("✗", msg)
	case "error":
		d.errPending = true
		d.addError(ev.Message)
		d.live.note("!", ev.Message)
	case "request_user_input":
		d.live.note("?", "codex asked for input, which a headless run cannot give")
	case "item.started", "item.updated", "item.completed":
		if ev.Item == nil || !d.item(ev.Type, ev.Item) {
			d.unknown++
		}
	default:
		d.unknown++
	}
}

// item handles one item event and reports whether its type is known.
func (d *codexDecoder) item(evType string, it *codexItem) bool {
	completed := evType == "item.completed"
	// Show each item once: when it starts, or when it completes if no
	// start was seen.
	show := evType != "item.updated" && !d.seen[it.ID]
	if show && it.ID != "" {
		d.seen[it.ID] = true
	}
	switch it.Type {
	case "agent_message":
		if completed {
			t := it.Text
			d.final = &t
			d.live.text(t)
		}
	case "command_execution":
		if show {
			d.live.tool("exec", it.Command)
		}
		if completed {
			d.tools.call()
			if it.failed() || it.ExitCode != nil && *it.ExitCode != 0 {
				why := exitWhy(it.ExitCode, it.Output)
				if it.Status == "declined" {
					why = "declined"
				}
				d.tools.fail(d.live, "exec", it.Command, why)
			}
		}
	case "file_change":
		// Shown once done: only then is it known whether it applied.
		if completed {
			d.tools.call()
			var parts []string
			for _, c := range it.Changes {
				parts = append(parts, c.Kind+" "+c.Path)
			}
			if it.failed() {
				why := "not applied"
				if it.Status == "declined" {
					why = "declined"
				}
				d.tools.fail(d.live, "edit", strings.Join(parts, ", "), why)
			} else {
				d.live.tool("edit", strings.Join(parts, ", "))
			}
		}
	case "mcp_tool_call":
		if show {
			d.live.tool("mcp", it.Server+"."+it.Tool)
		}
		if completed {
			d.tools.call()
			var why string
			if it.Error != nil {
				why = it.Error.Message
			}
			if it.failed() || why != "" {
				d.tools.fail(d.live, "mcp", it.Server+"."+it.Tool, cmp.Or(why, it.Status))
			}
		}
	case "web_search":
		if show {
			d.live.tool("search", it.Query)
			d.tools.call()
		}
	case "error":
		if completed {
			d.live.note("!", it.Message)
		}
	case "reasoning", "plan", "todo_list", "collab_tool_call":
	default:
		return false
	}
	return true
}

func (d *codexDecoder) addError(msg string) {
	if msg == "" {
		return
	}
	if n := len(d.errors); n > 0 && d.errors[n-1] == msg {
		return // codex often repeats an error event's text in turn.failed
	}
	d.errors = append(d.errors, msg)
}

func (d *codexDecoder) finish(r *Result) bool {
	r.SessionID = d.threadID
	r.NumTurns = d.turns
	r.UnknownEvents = d.unknown
	if u := d.usage; u != nil {
		r.InputTokens = u.InputTokens
		r.OutputTokens = u.OutputTokens
		r.CacheReadTokens = u.CachedInputTokens
	}
	d.tools.finish(r)
	r.IsError = d.failed || d.errPending
	r.Errors = append([]string(nil), d.errors...)
	if d.final == nil {
		return false
	}
	r.FinalText = *d.final
	return d.completed
}

// codexLastMessage is the fallback when the stream held no agent_message:
// the --output-last-message file.
func codexLastMessage(data []byte) (string, bool) {
	s := string(data)
	if strings.TrimSpace(s) == "" {
		return "", false
	}
	return s, true
}
