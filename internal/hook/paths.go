package hook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
)

// pathKeys are the tool_input and tool_response fields that name the file
// a tool changed, across harnesses (Claude Write/Edit/MultiEdit use
// file_path, NotebookEdit notebook_path, Write's response filePath, pi
// path).
var pathKeys = []string{"file_path", "filePath", "notebook_path", "notebookPath", "path"}

// ChangedFiles returns the files a file-changing tool touched, in order,
// without duplicates: the path fields of its input and response, and the
// file headers of any apply_patch text in its input (Codex apply_patch
// puts the patch in "command", Droid ApplyPatch in "input" or "patch").
// Paths are returned as written, relative or absolute.
func ChangedFiles(input, response json.RawMessage) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		p = strings.TrimSpace(p)
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, raw := range []json.RawMessage{input, response} {
		f, err := decodeFields(raw)
		if err != nil {
			// Codex may pass the patch itself as a string.
			var s string
			if json.Unmarshal(raw, &s) == nil {
				for _, p := range PatchFiles(s) {
					add(p)
				}
			}
			continue
		}
		for _, k := range pathKeys {
			add(f.Str(k))
		}
		for _, v := range f {
			var s string
			if json.Unmarshal(v, &s) == nil && strings.Contains(s, "*** ") {
				for _, p := range PatchFiles(s) {
					add(p)
				}
			}
		}
	}
	return out
}

// patchHeaders are the apply_patch file operations.
var patchHeaders = []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "}

// PatchFiles returns the files an apply_patch text adds, updates, deletes
// or moves to.
func PatchFiles(patch string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(patch))
	sc.Buffer(make([]byte, 0, 64<<10), len(patch)+1)
	for sc.Scan() {
		line := bytes.TrimRight(sc.Bytes(), "\r")
		for _, h := range patchHeaders {
			if bytes.HasPrefix(line, []byte(h)) {
				out = append(out, strings.TrimSpace(string(line[len(h):])))
			}
		}
	}
	return out
}
