//go:build !linux

package fsstore

import "os"

// countNames counts the artifact names in dir, whatever their type.
func countNames(dir string) (int, error) {
	f, err := os.Open(dir)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if _, ok := artifactID(name); ok {
			n++
		}
	}
	return n, nil
}
