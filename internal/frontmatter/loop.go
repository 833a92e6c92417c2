package frontmatter

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/baton-agent/baton"
)

// DecodeLoop parses a loop file. The loop prompt is everything between the
// "## Loop Prompt" heading and the last "## Notes" heading, verbatim: it
// may hold "---" lines, "## " lines or fences of its own.
func DecodeLoop(data []byte) (*baton.Loop, error) {
	front, body, err := Split(data)
	if err != nil {
		return nil, err
	}
	entries, err := parseFront(front)
	if err != nil {
		return nil, err
	}
	l := &baton.Loop{}
	for _, e := range entries {
		var err error
		switch e.Key {
		case "id":
			l.ID, err = decodeString(e)
		case "created_at":
			l.CreatedAt, err = decodeTime(e)
		case "updated_at":
			l.UpdatedAt, err = decodeTime(e)
		case "status":
			var s string
			s, err = decodeString(e)
			l.Status = baton.LoopStatus(s)
		case "iteration":
			l.Iteration, err = decodeInt(e)
		case "max_iterations":
			l.MaxIterations, err = decodeInt(e)
		case "completion_promise":
			l.CompletionPromises, err = decodePromises(e)
		case "source_packet_id":
			l.SourcePacketID, err = decodeString(e)
		case "session_id":
			l.SessionID, err = decodeString(e)
		case "outcome":
			l.Outcome, err = decodeString(e)
		case "consecutive_blocks":
			l.ConsecutiveBlocks, err = decodeInt(e)
		case "compacted_packet":
			l.CompactedPacket, err = decodeString(e)
		case "verify":
			l.Verify, err = decodeList(e)
		case "verify_timeout":
			l.VerifyTimeout, err = decodeDuration(e)
		case "verify_runs":
			err = decodeJSON(e, &l.VerifyRuns)
		case "pause_reason":
			l.PauseReason, err = decodeString(e)
		case "max_tokens":
			l.MaxTokens, err = decodeInt64(e)
		case "max_cost_usd":
			l.MaxCostUSD, err = decodeFloat(e)
		case "max_duration":
			l.MaxDuration, err = decodeDuration(e)
		case "active_since":
			l.ActiveSince, err = decodeOptTime(e)
		case "active_for":
			l.ActiveFor, err = decodeDuration(e)
		case "spent":
			err = decodeJSON(e, &l.Spent)
		case "usage":
			err = decodeJSON(e, &l.Usage)
		case "stall_rounds":
			l.StallRounds, err = decodeInt(e)
		case "stall":
			err = decodeJSON(e, &l.Stall)
		default:
			l.Extra = append(l.Extra, baton.Field{Key: e.Key, Raw: e.Raw})
		}
		if err != nil {
			return nil, err
		}
	}
	if l.ID == "" || l.Status == "" || l.CreatedAt.IsZero() || l.UpdatedAt.IsZero() {
		return nil, &SyntaxError{Msg: "a loop needs id, created_at, updated_at and status"}
	}
	const open = "## " + baton.SectionLoopPrompt + "\n"
	const notes = "\n## " + baton.SectionLoopNotes + "\n"
	norm := body
	start := strings.Index(norm, open)
	if start < 0 || (start > 0 && norm[start-1] != '\n') {
		return nil, &SyntaxError{Msg: fmt.Sprintf("loop %s has no %q section", l.ID, "## "+baton.SectionLoopPrompt)}
	}
	region := norm[start+len(open):]
	if i := strings.LastIndex("\n"+region, notes); i >= 0 {
		// i indexes "\n"+region; the Notes heading starts at region[i].
		tail := region[i:]
		region = region[:i]
		_, secs := ParseSections(tail)
		if len(secs) > 0 {
			l.Notes = secs[0].Body
			if len(secs) > 1 {
				l.Trailing = secs[1:]
			}
		}
	}
	region = strings.TrimPrefix(region, "\n")
	region = strings.TrimSuffix(region, "\n")
	region = strings.TrimSuffix(region, "\n")
	l.Prompt = region
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return l, nil
}

// decodePromises accepts null, one string, or a list of strings.
func decodePromises(e Entry) ([]string, error) {
	if e.Node.Kind == SequenceNode {
		return decodeList(e)
	}
	s, err := decodeOptString(e)
	if err != nil || s == nil {
		return nil, err
	}
	if strings.HasPrefix(strings.TrimSpace(*s), "[") {
		return decodeList(e)
	}
	return []string{*s}, nil
}

// EncodeLoop renders l. The prompt is written verbatim between a blank line
// after its heading and a blank line before Notes, with LF line endings.
func EncodeLoop(l *baton.Loop) []byte {
	var b bytes.Buffer
	w := writer{&b}
	b.WriteString("---\n")
	w.str("id", l.ID)
	w.time("created_at", l.CreatedAt)
	w.time("updated_at", l.UpdatedAt)
	w.str("status", string(l.Status))
	w.int("iteration", l.Iteration)
	w.int("max_iterations", l.MaxIterations)
	switch len(l.CompletionPromises) {
	case 0:
		w.null("completion_promise")
	case 1:
		w.str("completion_promise", l.CompletionPromises[0])
	default:
		w.list("completion_promise", l.CompletionPromises)
	}
	w.optStr("source_packet_id", l.SourcePacketID)
	w.optStr("session_id", l.SessionID)
	w.optStr("outcome", l.Outcome)
	if l.ConsecutiveBlocks != 0 {
		w.int("consecutive_blocks", l.ConsecutiveBlocks)
	}
	w.optStr("compacted_packet", l.CompactedPacket)
	if len(l.Verify) > 0 {
		w.list("verify", l.Verify)
	}
	if l.VerifyTimeout != 0 {
		w.str("verify_timeout", l.VerifyTimeout.String())
	}
	if len(l.VerifyRuns) > 0 {
		w.json("verify_runs", l.VerifyRuns)
	}
	w.optStr("pause_reason", l.PauseReason)
	if l.MaxTokens != 0 {
		w.str("max_tokens", strconv.FormatInt(l.MaxTokens, 10))
	}
	if l.MaxCostUSD != 0 {
		w.str("max_cost_usd", strconv.FormatFloat(l.MaxCostUSD, 'f', -1, 64))
	}
	if l.MaxDuration != 0 {
		w.str("max_duration", l.MaxDuration.String())
	}
	if !l.ActiveSince.IsZero() {
		w.time("active_since", l.ActiveSince)
	}
	if l.ActiveFor != 0 {
		w.str("active_for", l.ActiveFor.String())
	}
	if !reflect.DeepEqual(l.Spent, baton.Spend{}) {
		w.json("spent", l.Spent)
	}
	if !reflect.DeepEqual(l.Usage, baton.UsageCursor{}) {
		w.json("usage", l.Usage)
	}
	if l.StallRounds != 0 {
		w.int("stall_rounds", l.StallRounds)
	}
	if !reflect.DeepEqual(l.Stall, baton.Stall{}) {
		w.json("stall", l.Stall)
	}
	w.extra(l.Extra)
	b.WriteString("---\n\n## ")
	b.WriteString(baton.SectionLoopPrompt)
	b.WriteString("\n\n")
	b.WriteString(l.Prompt)
	b.WriteString("\n\n## ")
	b.WriteString(baton.SectionLoopNotes)
	b.WriteByte('\n')
	notes := l.Notes
	if notes == "" {
		notes = "\n"
	}
	b.WriteString(notes)
	RenderSections(&b, l.Trailing)
	return []byte(LF(b.String()))
}
