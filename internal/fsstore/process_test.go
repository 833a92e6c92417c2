package fsstore

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/frontmatter"
)

// TestMain lets the test binary act as a separate writer process, so the
// concurrency and crash tests exercise real processes, not goroutines.
func TestMain(m *testing.M) {
	switch os.Getenv("BATON_FSSTORE_HELPER") {
	case "append":
		os.Exit(helperAppend())
	case "append-batches":
		os.Exit(helperAppendBatches())
	case "rewrite":
		os.Exit(helperRewrite())
	case "loop-increment":
		os.Exit(helperLoopIncrement())
	}
	os.Exit(m.Run())
}

func helperAppend() int {
	s := Open(os.Getenv("ROOT"), Options{})
	n, _ := strconv.Atoi(os.Getenv("N"))
	w := os.Getenv("WORKER")
	for i := 0; i < n; i++ {
		e := baton.RelevantFile{Timestamp: time.Now().UTC(), FilePath: fmt.Sprintf("w%s/file-%05d.go", w, i), Source: baton.FromTool, Confidence: 0.5}
		if err := s.AppendRelevantFiles(context.Background(), e); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// helperLoopIncrement bumps a loop's iteration N times, as N stop hooks in
// a row would.
func helperLoopIncrement() int {
	s := Open(os.Getenv("ROOT"), Options{})
	n, _ := strconv.Atoi(os.Getenv("N"))
	for i := 0; i < n; i++ {
		_, err := s.UpdateLoop(context.Background(), os.Getenv("ID"), func(l *baton.Loop) error {
			l.Iteration++
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// helperRewrite rewrites one packet forever with bodies of changing size,
// until it is killed.
func helperRewrite() int {
	s := Open(os.Getenv("ROOT"), Options{})
	id := os.Getenv("ID")
	for i := 0; ; i++ {
		_, err := s.UpdatePacket(context.Background(), id, func(p *baton.Packet) error {
			body := strings.Repeat(fmt.Sprintf("line %d of a long note\n", i), 2000+i%3000)
			// Replace the notes, or add them: a bigger or smaller file each time.
			for i := range p.Sections {
				if p.Sections[i].Heading == baton.SectionNotes {
					p.Sections[i].Body = "\n" + body
					return nil
				}
			}
			p.Sections = append(p.Sections, baton.Section{Heading: baton.SectionNotes, Body: "\n" + body})
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Stdout.Write([]byte{'.'}) // one rewrite done: the test kills during a later one
	}
}

func helperCmd(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// Sixteen processes append to the relevant-files log at once: no line is
// lost, none is torn or interleaved.
func TestConcurrentAppendsAcrossProcesses(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	const workers, perWorker = 16, 200
	var cmds []*exec.Cmd
	for w := 0; w < workers; w++ {
		c := helperCmd(t, "BATON_FSSTORE_HELPER=append", "ROOT="+s.Root(), "N="+strconv.Itoa(perWorker), "WORKER="+strconv.Itoa(w))
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer failed: %v", err)
		}
	}
	seen := map[string]int{}
	st, err := s.ScanRelevantFiles(func(r baton.RelevantFile) error { seen[r.FilePath]++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.Corrupt != 0 || st.Lines != workers*perWorker {
		t.Fatalf("scan = %+v; want %d valid lines and none corrupt", st, workers*perWorker)
	}
	for w := 0; w < workers; w++ {
		for i := 0; i < perWorker; i++ {
			if p := fmt.Sprintf("w%d/file-%05d.go", w, i); seen[p] != 1 {
				t.Fatalf("%s seen %d times, want 1", p, seen[p])
			}
		}
	}
}

// A writer killed at a random point mid-rewrite leaves the old packet or
// the new one, never a torn file.
func TestKilledWriterNeverTearsPacket(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	p := testPacket("crash test")
	if err := s.CreatePacket(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Dir(), PacketsDir, p.ID+".md")
	for round := 0; round < 12; round++ {
		c := helperCmd(t, "BATON_FSSTORE_HELPER=rewrite", "ROOT="+s.Root(), "ID="+p.ID)
		done, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		// Killed after 1 to 4 rewrites: mid-way through the next one, at a
		// point that varies with the file's size and the machine.
		if _, err := io.ReadFull(done, make([]byte, 1+round%4)); err != nil {
			t.Fatalf("round %d: the writer stopped: %v", round, err)
		}
		_ = c.Process.Kill()
		_ = c.Wait()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := frontmatter.DecodePacket(b); err != nil {
			t.Fatalf("round %d: packet torn after kill: %v", round, err)
		}
		if !strings.HasSuffix(string(b), "\n") {
			t.Fatalf("round %d: packet does not end with a newline (torn write)", round)
		}
	}
	// Dead writers may leave temp files behind; listings ignore them.
	list, warns, err := s.FindPackets(PacketFilter{})
	if err != nil || len(warns) != 0 || len(list) != 1 {
		t.Fatalf("FindPackets after crashes = %d packets, %v, %v", len(list), warns, err)
	}
}
