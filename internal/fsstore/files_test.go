package fsstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func TestFiles(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	touch := func(min int, path string) baton.RelevantFile {
		return baton.RelevantFile{Timestamp: t0.Add(time.Duration(min) * time.Minute), FilePath: path, Source: baton.FromTool, Confidence: 0.5}
	}
	if err := s.AppendRelevantFiles(ctx, touch(0, "a.go"), touch(1, "b.go")); err != nil {
		t.Fatal(err)
	}
	p := testPacket("first")
	p.CreatedAt = t0.Add(5 * time.Minute)
	if err := s.CreatePacket(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendRelevantFiles(ctx, touch(10, "c.go"), touch(11, "d.go"), touch(12, "d.go")); err != nil {
		t.Fatal(err)
	}
	// One line that cannot be read is counted, not fatal.
	f, err := os.OpenFile(filepath.Join(s.IndexDir(), RelevantFilesLog), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{torn\n")
	f.Close()

	paths := func(l FileList) []string {
		out := []string{}
		for _, r := range l.Files {
			out = append(out, r.Path)
		}
		return out
	}
	for _, tt := range []struct {
		name      string
		req       FilesRequest
		want      []string
		since     string
		more      int
		sinceTime time.Time
	}{
		{"pending: since the newest packet", FilesRequest{}, []string{"d.go", "c.go"}, p.ID, 0, p.CreatedAt},
		{"all", FilesRequest{All: true}, []string{"d.go", "c.go", "b.go", "a.go"}, "", 0, time.Time{}},
		{"all, limited", FilesRequest{All: true, Limit: 1}, []string{"d.go"}, "", 3, time.Time{}},
		{"since a packet by prefix", FilesRequest{Since: "20261122T0905"}, []string{"d.go", "c.go"}, p.ID, 0, p.CreatedAt},
		{"since latest", FilesRequest{Since: "latest", Limit: 5}, []string{"d.go", "c.go"}, p.ID, 0, p.CreatedAt},
	} {
		got, err := s.Files(tt.req)
		if err != nil {
			t.Errorf("%s: Files(%+v) error %v", tt.name, tt.req, err)
			continue
		}
		since := ""
		if got.Since != nil {
			since = got.Since.ID
		}
		if diff := cmp.Diff(tt.want, paths(got)); diff != "" || since != tt.since || got.More != tt.more || !got.SinceTime.Equal(tt.sinceTime) || got.SkippedLines != 1 {
			t.Errorf("%s: Files(%+v) = since %q (%v), more %d, skipped %d, want since %q, more %d, skipped 1; files (-want +got):\n%s",
				tt.name, tt.req, since, got.SinceTime, got.More, got.SkippedLines, tt.since, tt.more, diff)
		}
	}
	for _, tt := range []struct {
		req  FilesRequest
		code baton.Code
	}{
		{FilesRequest{All: true, Since: "latest"}, baton.Invalid},
		{FilesRequest{Limit: -1}, baton.Invalid},
		{FilesRequest{Since: "nothing"}, baton.NotFound},
	} {
		if _, err := s.Files(tt.req); baton.ErrorCode(err) != tt.code {
			t.Errorf("Files(%+v) error %v, want code %q", tt.req, err, tt.code)
		}
	}
	// An empty listing is [], never nil, so JSON says so.
	empty := newStore(t)
	if got, err := empty.Files(FilesRequest{}); err != nil || got.Files == nil || len(got.Files) != 0 || got.Since != nil {
		t.Errorf("Files() in an empty store = %+v, %v", got, err)
	}
}

// A packet or loop too large to read back is refused when written, so no
// reader ever skips a packet the writer reported written; one just under
// the limit is read back.
func TestWriteAndReadShareOneLimit(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	withBody := func(n int) *baton.Packet {
		p := testPacket("big")
		p.Sections = append(p.Sections, baton.Section{Heading: baton.SectionNotes, Body: "\n" + strings.Repeat("x", n) + "\n"})
		return p
	}
	big := withBody(MaxArtifactBytes)
	err := s.CreatePacket(ctx, big)
	if baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), "over the 4.0 MiB limit") || !strings.Contains(err.Error(), "shorten it") {
		t.Fatalf("CreatePacket(over 4 MiB) = %v, want Invalid saying the limit and what to do", err)
	}
	if ids, _ := packets.ids(s); len(ids) != 0 {
		t.Fatalf("a refused packet was written: %v", ids)
	}

	fits := withBody(MaxArtifactBytes - 4096)
	if err := s.CreatePacket(ctx, fits); err != nil {
		t.Fatalf("CreatePacket(just under 4 MiB) = %v", err)
	}
	if l, err := s.Latest(); err != nil || l.Packet == nil || l.Packet.ID != fits.ID || len(l.Skipped) != 0 {
		t.Fatalf("Latest() after writing a packet under the limit = %+v, %v", l, err)
	}
	// An update that would grow it past the limit leaves it as it was.
	_, err = s.UpdatePacket(ctx, fits.ID, func(p *baton.Packet) error {
		p.Sections = append(p.Sections, baton.Section{Heading: "More", Body: strings.Repeat("y", 8192)})
		return nil
	})
	if baton.ErrorCode(err) != baton.Invalid {
		t.Fatalf("UpdatePacket(past 4 MiB) = %v, want Invalid", err)
	}
	if p, err := s.FindPacketByID(fits.ID); err != nil || len(p.Sections) != len(fits.Sections) {
		t.Errorf("after a refused update the packet reads %v, %v", p, err)
	}
	// Loops share the rule.
	l := testLoop(strings.Repeat("z", MaxArtifactBytes))
	if err := s.CreateLoop(ctx, l); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("CreateLoop(over 4 MiB) = %v, want Invalid", err)
	}
}
