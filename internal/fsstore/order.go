package fsstore

import (
	"time"
)

// Packets and loops record their times to the second, and two handoffs in
// the same second are common (a hook and a command, or a script). Order
// within a second comes from the file's modification time, which the
// filesystem keeps to the nanosecond (to a few milliseconds in practice)
// and which every write sets, since baton writes each file whole; when
// that ties too, from the ids compared as people read them, so that
// "x-10" follows "x-9". The order is the same on every read.

// stamp is what orders one artifact: its recorded time and its file's
// modification time.
type stamp struct {
	id  string
	at  time.Time // updated_at or created_at, to the second
	mod time.Time // the file's modification time; zero when unknown
}

// newer reports whether a sorts before b, newest first.
func newer(a, b stamp) bool {
	if !a.at.Equal(b.at) {
		return a.at.After(b.at)
	}
	if !a.mod.Equal(b.mod) {
		return a.mod.After(b.mod)
	}
	return compareIDs(a.id, b.id) > 0
}

// compareIDs orders ids as people read them: runs of digits compare as
// numbers (leading zeros aside, then by length of the run), everything
// else byte by byte. It returns -1, 0 or +1, and 0 only for equal ids.
func compareIDs(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			if c := compareNumbers(a[:da], b[:db]); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			if a[0] < b[0] {
				return -1
			}
			return 1
		}
		a, b = a[1:], b[1:]
	}
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return -1
	}
	return 1
}

// compareNumbers compares two runs of decimal digits by value, then the
// one with fewer leading zeros first, so that distinct runs never tie.
func compareNumbers(a, b string) int {
	ta, tb := trimZeros(a), trimZeros(b)
	switch {
	case len(ta) != len(tb):
		return sign(len(ta) - len(tb))
	case ta != tb:
		if ta < tb {
			return -1
		}
		return 1
	}
	return sign(len(b) - len(a)) // "9" after "09": fewer zeros is larger
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
