package brief

import (
	"os"
	"path/filepath"

	"github.com/baton-agent/baton/internal/fsstore"
)

// relevantFilesInBrief is how many of the context store's top files a
// brief lists.
const relevantFilesInBrief = 15

// storeFiles returns up to n of the context store's top-ranked files that
// still exist, and how many log lines could not be read. A project with
// no store has none.
func storeFiles(st *fsstore.Store, n int) (files []RelevantFile, corrupt int, err error) {
	if !st.Exists() {
		return nil, 0, nil
	}
	ranks, stats, err := st.RankFiles(fsstore.FileQuery{})
	if err != nil {
		return nil, 0, err
	}
	for _, r := range ranks {
		if len(files) == n {
			break
		}
		if _, err := os.Stat(filepath.Join(st.Root(), filepath.FromSlash(r.Path))); err != nil {
			continue // deleted or moved since: pointing the agent there would mislead it
		}
		files = append(files, RelevantFile{Path: r.Path, Confirmed: r.Confirmed})
	}
	return files, stats.Corrupt, nil
}
