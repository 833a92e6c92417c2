package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/baton-agent/baton/bench/proctime"
	"github.com/baton-agent/baton/internal/fsstore"
)

// hostile times the hooks on stores a checkout or a local process could
// have planted: links to /dev/zero and out of the store, named pipes,
// oversized packets and logs. Each scenario gets a fresh project with a
// packet, a foreground loop bound to the session and a relevant-files
// log, then one plant; the table ends with the slowest scenario.
func hostile(bin string, n int) {
	type scenario struct {
		name  string
		event string
		plant func(p project) map[string]any // extra payload fields
		runs  int
		want  string // in the hook's output: it noticed
	}
	link := func(target, rel string) func(p project) map[string]any {
		return func(p project) map[string]any {
			path := p.store(rel)
			check(os.RemoveAll(path))
			check(os.Symlink(target, path))
			return nil
		}
	}
	fifo := func(rel string) func(p project) map[string]any {
		return func(p project) map[string]any {
			path := p.store(rel)
			check(os.RemoveAll(path))
			check(syscall.Mkfifo(path, 0o644))
			return nil
		}
	}
	transcript := func(path func(p project) string) func(p project) map[string]any {
		return func(p project) map[string]any {
			return map[string]any{"transcript_path": path(p), "last_assistant_message": nil}
		}
	}
	none := func(project) map[string]any { return nil }
	scenarios := []scenario{
		// The same projects with nothing planted: what each event costs
		// normally, for comparison.
		{"session-start, nothing planted", "session-start", none, n, ""},
		{"stop, nothing planted (loop blocks)", "stop", none, n, `"decision":"block"`},
		{"pre-compact, nothing planted", "pre-compact", none, n, ""},
		{"post-tool-use, nothing planted", "post-tool-use", none, n, ""},
		{"session-start, a packet linked to /dev/zero", "session-start", link("/dev/zero", "packets/PACKET.md"), n, ""},
		{"session-start, a packet that is a named pipe", "session-start", fifo("packets/PACKET.md"), n, ""},
		{"session-start, the foreground loop linked to /dev/zero", "session-start", link("/dev/zero", "loops/LOOP.md"), n, "symlink"},
		{"session-start, relevant-files.jsonl linked to /dev/zero", "session-start", link("/dev/zero", "MACHINE/relevant-files.jsonl"), n, "symlink"},
		{"session-start, the store directory linked out of the project", "session-start", func(p project) map[string]any {
			out, err := os.MkdirTemp("", "hookbench-outside-*")
			check(err)
			check(os.Rename(p.store(""), filepath.Join(out, "context")))
			check(os.Symlink(filepath.Join(out, "context"), p.store("")))
			return nil
		}, n, "symlink"},
		{"session-start, a packet 1.5 times the size limit", "session-start", func(p project) map[string]any {
			grow(p.store("packets/PACKET.md"), fsstore.MaxArtifactBytes*3/2)
			return nil
		}, n, "over the " + fmt.Sprintf("%.1f MiB", float64(fsstore.MaxArtifactBytes)/(1<<20)) + " limit"},
		{"session-start, a packet just under the size limit", "session-start", func(p project) map[string]any {
			grow(p.store("packets/PACKET.md"), fsstore.MaxArtifactBytes-64<<10)
			return nil
		}, n, ""},
		{"session-start, 1 000 packets", "session-start", func(p project) map[string]any {
			b, err := os.ReadFile(p.store("packets/PACKET.md"))
			check(err)
			for i := range 1000 {
				id := fmt.Sprintf("20261101T%06dZ-old-%d", i, i)
				check(os.WriteFile(p.store("packets/"+id+".md"), bytes.Replace(b, []byte("id: "+p.packet), []byte("id: "+id), 1), 0o644))
			}
			return nil
		}, n / 3, ""},
		{"session-start, a 200 MB relevant-files.jsonl", "session-start", func(p project) map[string]any {
			bigLog(p)
			return nil
		}, n / 10, ""},
		{"stop, the foreground loop linked to /dev/zero", "stop", link("/dev/zero", "loops/LOOP.md"), n, "symlink"},
		{"stop, the foreground loop is a named pipe", "stop", fifo("loops/LOOP.md"), n, "named pipe"},
		{"stop, foreground-loops.json linked to /dev/zero", "stop", link("/dev/zero", "MACHINE/foreground-loops.json"), n, "symlink"},
		{"stop, the loop's lock file linked out of the store", "stop", func(p project) map[string]any {
			out, err := os.MkdirTemp("", "hookbench-outside-*")
			check(err)
			return link(filepath.Join(out, "lock"), "loops/LOOP.md.lock")(p)
		}, n, "symlink"},
		{"stop, transcript_path is a named pipe", "stop", transcript(func(p project) string {
			path := filepath.Join(p.dir, "t.fifo")
			check(syscall.Mkfifo(path, 0o644))
			return path
		}), n, "FIFO"},
		{"stop, transcript_path is /dev/zero", "stop", transcript(func(project) string { return "/dev/zero" }), n, "device"},
		{"stop, the foreground loop checked out with CRLF (loop blocks)", "stop", func(p project) map[string]any {
			path := p.store("loops/LOOP.md")
			b, err := os.ReadFile(path)
			check(err)
			check(os.WriteFile(path, bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")), 0o644))
			return nil
		}, n, `"decision":"block"`},
		{"pre-compact, transcript_path is a named pipe", "pre-compact", transcript(func(p project) string {
			path := filepath.Join(p.dir, "t.fifo")
			check(syscall.Mkfifo(path, 0o644))
			return path
		}), n, ""},
		{"pre-compact, a 200 MB relevant-files.jsonl", "pre-compact", func(p project) map[string]any {
			bigLog(p)
			return nil
		}, n / 10, ""},
		{"pre-compact, packets/ linked out of the store", "pre-compact", func(p project) map[string]any {
			out, err := os.MkdirTemp("", "hookbench-outside-*")
			check(err)
			check(os.RemoveAll(p.store("packets")))
			check(os.Symlink(out, p.store("packets")))
			return nil
		}, n, "symlink"},
		{"post-tool-use, relevant-files.jsonl linked to /dev/zero", "post-tool-use", link("/dev/zero", "MACHINE/relevant-files.jsonl"), n, "symlink"},
	}
	fmt.Println("| hostile store | runs | median | p90 | slowest | peak RSS |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	var worst proctime.Stats
	worstName, worstEvent := "", ""
	normalMedian := map[string]proctime.Stats{}
	for _, s := range scenarios {
		p := newProject(bin)
		extra := s.plant(p)
		m := map[string]any{"session_id": "bench", "cwd": p.dir, "last_assistant_message": "still working", "source": "startup", "trigger": "auto"}
		if s.event == "post-tool-use" {
			m["tool_name"] = "Write"
			m["tool_input"] = map[string]any{"file_path": filepath.Join(p.dir, "main.go")}
		}
		for k, v := range extra {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		stdin, _ := json.Marshal(m)
		want := s.want
		st, err := proctime.Measure(proctime.Run{
			Argv: []string{bin, "hook", s.event, "--harness", "claude"}, Stdin: stdin, N: s.runs, Dir: os.TempDir(),
			Check: func(out []byte) error {
				if !bytes.Contains(out, []byte(want)) {
					return fmt.Errorf("the hook did not report %q: %s", want, out)
				}
				return nil
			},
		})
		check(err)
		fmt.Printf("| %s | %d | %s | %s | %s | %s |\n", s.name, st.Runs, proctime.MS(st.Median), proctime.MS(st.P90), proctime.MS(st.Max), proctime.MB(st.MaxRSS))
		if strings.Contains(s.name, "nothing planted") {
			normalMedian[s.event] = st
		} else if st.Median > worst.Median {
			worst, worstName, worstEvent = st, s.name, s.event
		}
		p.remove()
	}
	base := normalMedian[worstEvent]
	fmt.Printf("\nSlowest hostile scenario (by median): %s, median %s, p90 %s; the same event with nothing planted: median %s, p90 %s.\n",
		worstName, proctime.MS(worst.Median), proctime.MS(worst.P90), proctime.MS(base.Median), proctime.MS(base.P90))
}

// project is a benchmark project: a git work tree with a store holding a
// packet, a foreground loop bound to session "bench" and a short
// relevant-files log.
type project struct {
	dir, packet, loop string
}

func newProject(bin string) project {
	dir, err := os.MkdirTemp("", "hookbench-hostile-*")
	check(err)
	check(os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	p := project{dir: dir}
	out := output(exec.Command(bin, "--root", dir, "handoff", "bench work", "--next-prompt", "carry on"))
	p.packet = strings.TrimSpace(out)
	c := exec.Command(bin, "--root", dir, "loop", "start", "--max-iterations", "0", "keep going")
	c.Env = append(os.Environ(), "BATON_SESSION_ID=bench")
	run(c, nil)
	var st struct {
		Loop struct {
			ID string `json:"id"`
		} `json:"loop"`
	}
	check(json.Unmarshal([]byte(output(exec.Command(bin, "--root", dir, "loop", "status", "--json"))), &st))
	p.loop = st.Loop.ID
	var log strings.Builder
	for i := range 200 {
		fmt.Fprintf(&log, `{"timestamp":"%s","file_path":"internal/pkg/file-%03d.go","source":"tool","confidence":0.5}`+"\n", time.Now().UTC().Format(time.RFC3339), i%40)
	}
	appendFile(p.store("MACHINE/relevant-files.jsonl"), log.String())
	return p
}

// store returns the path of rel under the store, PACKET and LOOP replaced
// by the project's packet and loop ids, MACHINE by the store's
// per-machine directory.
func (p project) store(rel string) string {
	machine, _ := filepath.Rel(filepath.Join(p.dir, fsstore.Dir), fsstore.Open(p.dir, fsstore.Options{}).IndexDir())
	rel = strings.NewReplacer("PACKET", p.packet, "LOOP", p.loop, "MACHINE", machine).Replace(rel)
	return filepath.Join(p.dir, ".agent", "context", rel)
}

func (p project) remove() { os.RemoveAll(p.dir) }

// bigLog appends 200 MB of relevant-files entries.
func bigLog(p project) {
	f, err := os.OpenFile(p.store("MACHINE/relevant-files.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	check(err)
	line := []byte(`{"timestamp":"2026-11-24T09:00:00Z","file_path":"internal/pkg/file-000.go","source":"tool","confidence":0.5}` + "\n")
	buf := bytes.Repeat(line, (1<<20)/len(line))
	for range 200 {
		_, err := f.Write(buf)
		check(err)
	}
	check(f.Close())
}

// grow appends lines filler lines to a packet's last section.
// grow appends about size bytes of filler lines to path.
func grow(path string, size int) {
	appendFile(path, strings.Repeat("filler line\n", size/len("filler line\n")))
}

func appendFile(path, s string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	check(err)
	_, err = f.WriteString(s)
	check(err)
	check(f.Close())
}

func output(c *exec.Cmd) string {
	out, err := c.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v: %v\n", c.Args, err)
		os.Exit(1)
	}
	return string(out)
}
