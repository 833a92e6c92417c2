// Command searchbench times `baton search` over a large project: 10,000
// packets and 1 GB of session transcripts (the goal: a query
// under 50 ms). It generates the project once into a cache directory and
// reuses it, builds the index (timed, the first time), then times
// queries of different selectivity in process, the refresh a query does
// first when nothing changed, and, with -baton, whole `baton search`
// processes. Usage:
//
//	go run ./bench/searchbench [-dir DIR] [-baton /path/to/baton] [-n 50]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/bench/proctime"
	"github.com/baton-agent/baton/internal/frontmatter"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/search"
)

func main() {
	cache, _ := os.UserCacheDir()
	dir := flag.String("dir", filepath.Join(cache, "baton-bench", "search-10k-1g"), "where the generated project is kept between runs")
	packets := flag.Int("packets", 10_000, "packets to generate")
	transcriptMB := flag.Int("transcript-mb", 1024, "MiB of transcripts to generate")
	n := flag.Int("n", 50, "runs per query")
	bin := flag.String("baton", "", "also time whole `baton search` processes with this binary")
	flag.Parse()
	ctx := context.Background()

	st := fsstore.Open(*dir, fsstore.Options{})
	// v2: the session log in the store's per-machine directory.
	stamp := filepath.Join(*dir, "generated-v2")
	if _, err := os.Stat(stamp); err != nil {
		fmt.Fprintf(os.Stderr, "generating %d packets and %d MiB of transcripts in %s ...\n", *packets, *transcriptMB, *dir)
		check(os.RemoveAll(*dir))
		generate(ctx, st, *packets, int64(*transcriptMB)<<20)
		check(os.WriteFile(stamp, nil, 0o644))
	}

	ix, err := search.Open(ctx, st)
	check(err)
	if on, _ := ix.Transcripts(ctx); !on {
		check(ix.SetTranscripts(ctx, true))
	}
	start := time.Now()
	rep, err := ix.Refresh(ctx)
	check(err)
	if rep.Indexed > 0 {
		fmt.Printf("Index built: %d packets, loops and transcripts, %d transcript messages, in %s\n", rep.Indexed, rep.Messages, time.Since(start).Round(time.Second))
	}
	var tbytes int64
	filepath.Walk(filepath.Join(*dir, "transcripts"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			tbytes += fi.Size()
		}
		return nil
	})
	fmt.Printf("Project: %d packets, %d loops, %.2f GB of transcripts; index %s: %.0f MB\n\n",
		count(filepath.Join(*dir, ".agent/context/packets")), count(filepath.Join(*dir, ".agent/context/loops")),
		float64(tbytes)/1e9, fsstore.SearchIndex, float64(ix.Size())/1e6)

	queries := []struct{ name, text string }{
		{"a rare word", "quixotic"},
		{"a word in 1 packet of 1000", "zeppelin"},
		{"a common word", "handler"},
		{"two common words", "retry handler"},
		{"three words", "flaky test timeout"},
		{"words only in transcripts", "greeting farewell"},
		{"no document has both (falls back to any)", "quixotic zeppelin"},
		{"nothing matches", "xylophonist"},
	}
	fmt.Println("| query (in process, index up to date) | words | results | median | p95 | max |")
	fmt.Println("|---|---|---:|---:|---:|---:|")
	var all []time.Duration
	for _, q := range queries {
		var ds []time.Duration
		var res []search.Result
		for i := 0; i < *n+1; i++ {
			t0 := time.Now()
			res, err = ix.Search(ctx, search.Query{Text: q.text, Limit: 20})
			d := time.Since(t0)
			check(err)
			if i > 0 {
				ds = append(ds, d)
			}
		}
		all = append(all, ds...)
		s := stats(ds)
		fmt.Printf("| %s | `%s` | %d | %s | %s | %s |\n", q.name, q.text, len(res), ms(s[0]), ms(s[1]), ms(s[2]))
	}
	s := stats(all)
	fmt.Printf("| all of them | | | %s | %s | %s |\n\n", ms(s[0]), ms(s[1]), ms(s[2]))

	var ds []time.Duration
	for i := 0; i < *n; i++ {
		t0 := time.Now()
		rep, err := ix.Refresh(ctx)
		check(err)
		if rep.Indexed != 0 {
			check(fmt.Errorf("a refresh with nothing changed indexed %d", rep.Indexed))
		}
		ds = append(ds, time.Since(t0))
	}
	s = stats(ds)
	fmt.Printf("Refresh before a query, nothing changed (the directories of packets and loops, and each transcript, stat'd): median %s, p95 %s, max %s\n", ms(s[0]), ms(s[1]), ms(s[2]))
	ds = nil
	for i := 0; i < 10; i++ {
		ix.ForceFullCheck()
		t0 := time.Now()
		_, err := ix.Refresh(ctx)
		check(err)
		ds = append(ds, time.Since(t0))
	}
	s = stats(ds)
	fmt.Printf("Refresh with the full check (once a minute: every packet and loop file stat'd): median %s, max %s\n\n", ms(s[0]), ms(s[2]))
	check(ix.Close())

	if *bin != "" {
		fmt.Println("| `baton search` as a whole process (refresh + query) | runs | median | p90 | peak RSS |")
		fmt.Println("|---|---:|---:|---:|---:|")
		for _, q := range []string{"zeppelin", "retry handler"} {
			r, err := proctime.Measure(proctime.Run{Argv: []string{*bin, "search", q, "--limit", "20"}, Dir: *dir, N: *n})
			check(err)
			fmt.Printf("| `baton search %s` | %d | %s | %s | %.0f MB |\n", q, r.Runs, ms(r.Median), ms(r.P90), float64(r.MaxRSS)/1e6)
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// stats is the median, p95 and max.
func stats(ds []time.Duration) [3]time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return [3]time.Duration{ds[len(ds)/2], ds[len(ds)*95/100], ds[len(ds)-1]}
}

func count(dir string) int {
	es, _ := os.ReadDir(dir)
	return len(es)
}

// words are the vocabulary of the generated text: common words most of
// the time (a Zipf-like pick), project words often, rare ones seldom.
var words = strings.Fields(`the a to of and in is for that it with on this be as are by we not
from at or an but can all if will one so do has was when which there use new more should then
file code test tests function handler request response error retry timeout config build run
loop packet session store index query cache token login user server client database migration
schema field value type struct method package module import return value string number list
map key commit branch merge review diff change fix bug issue feature release deploy check guard
verify flaky slow fast parallel worker queue job phase plan implement observe close agent model
prompt context budget transcript hook stop start resume cancel pause note decision question`)

var rare = []string{"quixotic", "zeppelin", "obsidian", "marzipan", "kaleidoscope"}

func sentence(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		// Zipf-like: low indexes far more often.
		k := int(float64(len(words)) * r.Float64() * r.Float64() * r.Float64())
		b.WriteString(words[k])
	}
	return b.String()
}

func generate(ctx context.Context, st *fsstore.Store, nPackets int, transcriptBytes int64) {
	_, err := st.Init(ctx)
	check(err)
	r := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pdir := filepath.Join(st.Dir(), fsstore.PacketsDir)
	check(os.MkdirAll(pdir, 0o755))
	for i := 0; i < nPackets; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		body := sentence(r, 120)
		if i%1000 == 7 {
			body += " " + rare[1] // one packet in a thousand
		}
		if i == 4242 {
			body += " " + rare[0]
		}
		p := &baton.Packet{ID: baton.TimestampID(at, fmt.Sprintf("packet %d", i), "packet"), CreatedAt: at, UpdatedAt: at, Status: baton.PacketDone,
			Purpose: sentence(r, 8), Source: "claude",
			Sections: []baton.Section{
				{Heading: baton.SectionIntent, Body: "\n" + sentence(r, 40) + "\n\n"},
				{Heading: "Context", Body: "\n" + body + "\n\n"},
				{Heading: baton.SectionNextPrompt, Body: "\n" + sentence(r, 30) + "\n"},
			}}
		check(os.WriteFile(filepath.Join(pdir, p.ID+".md"), frontmatter.EncodePacket(p), 0o644))
	}
	ldir := filepath.Join(st.Dir(), fsstore.LoopsDir)
	check(os.MkdirAll(ldir, 0o755))
	for i := 0; i < 200; i++ {
		at := t0.Add(time.Duration(i) * time.Hour)
		l := &baton.Loop{ID: baton.TimestampID(at, fmt.Sprintf("loop %d", i), "loop"), CreatedAt: at, UpdatedAt: at, Status: baton.LoopDone, Outcome: "DONE",
			Iteration: 3, MaxIterations: 20, CompletionPromises: []string{"DONE"}, Prompt: sentence(r, 60), Notes: "\n- " + sentence(r, 30) + "\n"}
		check(os.WriteFile(filepath.Join(ldir, l.ID+".md"), frontmatter.EncodeLoop(l), 0o644))
	}
	// Transcripts: Claude Code's line shapes, most bytes in tool results
	// (file contents), as in real sessions.
	tdir := filepath.Join(st.Root(), "transcripts")
	check(os.MkdirAll(tdir, 0o755))
	idx, err := st.MakeIndexDir()
	check(err)
	sessions, err := os.Create(filepath.Join(idx, fsstore.SessionsLog))
	check(err)
	var written int64
	for s := 0; written < transcriptBytes; s++ {
		id := fmt.Sprintf("5b1c0a2e-0000-4000-8000-%012d", s)
		path := filepath.Join(tdir, id+".jsonl")
		f, err := os.Create(path)
		check(err)
		w := bufio.NewWriterSize(f, 1<<20)
		var fileBytes int64
		for m := 0; fileBytes < 5<<20; m++ {
			at := t0.Add(time.Duration(s)*time.Hour + time.Duration(m)*time.Second)
			text := sentence(r, 40)
			if m%500 == 3 {
				text += " greeting farewell"
			}
			lines := []any{
				map[string]any{"type": "user", "timestamp": at, "sessionId": id, "message": map[string]any{"role": "user", "content": sentence(r, 25)}},
				map[string]any{"type": "assistant", "timestamp": at, "sessionId": id, "message": map[string]any{"id": fmt.Sprintf("msg_%d", m), "role": "assistant", "model": "claude-sonnet-4-5",
					"content": []any{map[string]any{"type": "text", "text": text}}, "usage": map[string]any{"input_tokens": 12, "output_tokens": 300}}},
				map[string]any{"type": "assistant", "timestamp": at, "sessionId": id, "message": map[string]any{"id": fmt.Sprintf("msg_%d", m), "role": "assistant", "model": "claude-sonnet-4-5",
					"content": []any{map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", m), "name": "Read", "input": map[string]any{"file_path": "/home/u/app/internal/x.go"}}}}},
				map[string]any{"type": "user", "timestamp": at, "sessionId": id, "message": map[string]any{"role": "user",
					"content": []any{map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("toolu_%d", m), "content": code(r, 8000+r.IntN(12000))}}}},
			}
			for _, l := range lines {
				b, _ := json.Marshal(l)
				w.Write(append(b, '\n'))
				fileBytes += int64(len(b) + 1)
			}
		}
		check(w.Flush())
		check(f.Close())
		written += fileBytes
		rec, _ := json.Marshal(baton.SessionRecord{SessionID: id, Harness: baton.HarnessClaude, Source: "startup", TranscriptPath: path, At: t0})
		sessions.Write(append(rec, '\n'))
	}
	check(sessions.Close())
}

// code is n bytes of source-like text.
func code(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "func %s%d(%s string) error { return %s(%q) }\n", words[r.IntN(len(words))], r.IntN(1000), words[r.IntN(len(words))], words[r.IntN(len(words))], sentence(r, 4))
	}
	return b.String()
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "searchbench:", err)
		os.Exit(1)
	}
}
