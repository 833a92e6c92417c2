// Command statefloor does only what a stop the loop blocks cannot avoid:
// it replaces a file of the loop file's size in the loops directory
// durably, as the hook does (a temp file written and fsynced, renamed over
// the file, the directory fsynced), and nothing else. bench/hooks.sh and
// bench/scale.sh time it beside the hook: the floor of that row.
//
//	statefloor DIR SIZE
package main

import (
	"os"
	"path/filepath"
	"strconv"
)

func main() {
	if len(os.Args) != 3 {
		os.Stderr.WriteString("usage: statefloor DIR SIZE\n")
		os.Exit(2)
	}
	dir := os.Args[1]
	size, err := strconv.Atoi(os.Args[2])
	check(err)
	tmp := filepath.Join(dir, ".statefloor.md.tmp-"+strconv.Itoa(os.Getpid()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	check(err)
	_, err = f.Write(make([]byte, size))
	check(err)
	check(f.Sync())
	check(f.Close())
	check(os.Rename(tmp, filepath.Join(dir, ".statefloor.md")))
	d, err := os.Open(dir)
	check(err)
	check(d.Sync())
	check(d.Close())
}

func check(err error) {
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
}
