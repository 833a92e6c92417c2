package frontmatter

import (
	"bytes"
	"fmt"

	"github.com/baton-agent/baton"
)

// DecodePacket parses a packet file. The result is validated.
func DecodePacket(data []byte) (*baton.Packet, error) {
	doc, err := Parse(data)
	if err != nil {
		return nil, err
	}
	p := &baton.Packet{Preamble: doc.Preamble, Sections: doc.Sections}
	for _, e := range doc.Front {
		var err error
		switch e.Key {
		case "id":
			p.ID, err = decodeString(e)
		case "created_at":
			p.CreatedAt, err = decodeTime(e)
		case "updated_at":
			p.UpdatedAt, err = decodeTime(e)
		case "status":
			var s string
			s, err = decodeString(e)
			p.Status = baton.PacketStatus(s)
		case "purpose":
			p.Purpose, err = decodeString(e)
		case "source":
			p.Source, err = decodeString(e)
		case "session_id":
			p.SessionID, err = decodeString(e)
		case "transcript_path":
			p.TranscriptPath, err = decodeString(e)
		case "relevant_files_confirmed":
			p.RelevantFilesConfirmed, err = decodeList(e)
		case "relevant_files_suggested":
			p.RelevantFilesSuggested, err = decodeList(e)
		case "validators":
			p.Validators, err = decodeList(e)
		case "loop_promise":
			p.LoopPromise, err = decodeOptString(e)
		case "loop_max_iterations":
			p.LoopMaxIterations, err = decodeInt(e)
		default:
			p.Extra = append(p.Extra, baton.Field{Key: e.Key, Raw: e.Raw})
		}
		if err != nil {
			return nil, err
		}
	}
	for _, k := range []struct {
		key     string
		missing bool
	}{
		{"id", p.ID == ""}, {"created_at", p.CreatedAt.IsZero()}, {"updated_at", p.UpdatedAt.IsZero()},
		{"status", p.Status == ""}, {"purpose", p.Purpose == ""},
	} {
		if k.missing {
			return nil, &SyntaxError{Msg: fmt.Sprintf("required frontmatter key %q is missing", k.key)}
		}
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// EncodePacket renders p with LF line endings. Known keys come first in
// the seed's order, optional ones only when set, then unknown keys as they
// were read.
func EncodePacket(p *baton.Packet) []byte {
	var b bytes.Buffer
	w := writer{&b}
	b.WriteString("---\n")
	w.str("id", p.ID)
	w.time("created_at", p.CreatedAt)
	w.time("updated_at", p.UpdatedAt)
	w.str("status", string(p.Status))
	w.str("purpose", p.Purpose)
	w.optStr("source", p.Source)
	w.optStr("session_id", p.SessionID)
	w.optStr("transcript_path", p.TranscriptPath)
	if p.RelevantFilesConfirmed != nil {
		w.list("relevant_files_confirmed", p.RelevantFilesConfirmed)
	}
	if p.RelevantFilesSuggested != nil {
		w.list("relevant_files_suggested", p.RelevantFilesSuggested)
	}
	if p.Validators != nil {
		w.list("validators", p.Validators)
	}
	if p.LoopPromise != nil {
		w.str("loop_promise", *p.LoopPromise)
	}
	if p.LoopMaxIterations != 0 {
		w.int("loop_max_iterations", p.LoopMaxIterations)
	}
	w.extra(p.Extra)
	b.WriteString("---\n")
	b.WriteString(p.Preamble)
	RenderSections(&b, p.Sections)
	return []byte(LF(b.String()))
}
