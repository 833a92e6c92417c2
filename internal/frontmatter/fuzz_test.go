package frontmatter

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzPacketCodec(f *testing.F) {
	f.Add(EncodePacket(samplePacket()))
	f.Add([]byte("---\nid: a\ncreated_at: 2026-11-22T09:34:00Z\nupdated_at: 2026-11-22T09:34:00Z\nstatus: draft\npurpose: p\nx: [1, 2]\n---\n## A\n```\n## B\n```\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\r\nid: a\r\n---\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePacket(data)
		if err != nil {
			return
		}
		// Whatever decodes must re-encode to a file that decodes to the same
		// packet, and from then on the bytes are stable.
		enc := EncodePacket(p)
		p2, err := DecodePacket(enc)
		if err != nil {
			t.Fatalf("re-decode failed: %v\ninput: %q\nencoded: %q", err, data, enc)
		}
		enc2 := EncodePacket(p2)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable:\n%q\n%q", enc, enc2)
		}
		if utf8.Valid([]byte(p.Purpose)) && p2.Purpose != p.Purpose {
			t.Fatalf("purpose changed: %q -> %q", p.Purpose, p2.Purpose)
		}
	})
}

func FuzzLoopCodec(f *testing.F) {
	f.Add(EncodeLoop(sampleLoop()))
	if b, err := os.ReadFile("testdata/loop_verify.golden.md"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("---\nid: l\ncreated_at: 2026-11-22T09:34:00Z\nupdated_at: 2026-11-22T09:34:00Z\nstatus: active\n---\n## Loop Prompt\n\n---\n## Notes\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := DecodeLoop(data)
		if err != nil {
			return
		}
		enc := EncodeLoop(l)
		l2, err := DecodeLoop(enc)
		if err != nil {
			t.Fatalf("re-decode failed: %v\ninput: %q\nencoded: %q", err, data, enc)
		}
		if l2.Prompt != l.Prompt {
			t.Fatalf("prompt changed: %q -> %q", l.Prompt, l2.Prompt)
		}
		if enc2 := EncodeLoop(l2); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable:\n%q\n%q", enc, enc2)
		}
	})
}

// A prompt of any text must survive a loop file verbatim, but for its
// line endings: written LF, a CR before a line's end (CRLF) is dropped,
// the last line's included.
func FuzzLoopPromptVerbatim(f *testing.F) {
	f.Add("go\n---\n## Notes\n")
	f.Add("```\n## Loop Prompt\n")
	f.Add("\n\nleading blank lines\n\n")
	f.Add("windows\r\nlines\r\r\nlast\r")
	f.Fuzz(func(t *testing.T, prompt string) {
		l := sampleLoop()
		l.Prompt = prompt
		if l.Validate() != nil {
			return
		}
		got, err := DecodeLoop(EncodeLoop(l))
		if err != nil {
			t.Fatalf("DecodeLoop error for prompt %q: %v", prompt, err)
		}
		want := strings.TrimSuffix(crlfReference(prompt+"\n"), "\n")
		if got.Prompt != want {
			t.Fatalf("prompt %q came back as %q, want %q", prompt, got.Prompt, want)
		}
	})
}

// crlfReference is LF the slow way: drop CRs before a newline, one at a
// time, until none is left.
func crlfReference(s string) string {
	for strings.Contains(s, "\r\n") {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	return s
}

// LF against the slow reference, and idempotent.
func FuzzLF(f *testing.F) {
	f.Add("a\r\nb\r\r\n\rc\r")
	f.Fuzz(func(t *testing.T, s string) {
		got := LF(s)
		if want := crlfReference(s); got != want {
			t.Fatalf("LF(%q) = %q, want %q", s, got, want)
		}
		if again := LF(got); again != got {
			t.Fatalf("LF not idempotent: %q then %q", got, again)
		}
	})
}
