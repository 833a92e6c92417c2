package fsstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// A store travels with its repository: a clone, a pull or an unpacked
// archive brings whatever someone committed under .agent/context, the
// files the store's .gitignore leaves out included (git add -f). So what
// is this machine's alone (which loop each session continues and which
// loops this machine trusts, the session and touch logs, the packet and
// loop indexes, the search index) lives in a directory whose name a
// checkout cannot know: indexes/machine-<key>, the key a hash of this
// machine's id and the store directory's inode. A copy of the project
// anywhere else (another machine, another directory) has another key,
// and starts with no per-machine state: nothing it carried is bound to a
// session, fed to a model, run, or read as an index.

// MachineDirPrefix starts the name of the per-machine directory in
// indexes/.
const MachineDirPrefix = "machine-"

// machineIDFiles are where Linux keeps the machine's id.
var machineIDFiles = []string{"/etc/machine-id", "/var/lib/dbus/machine-id"}

// readMachineID is this machine's id: systemd's (or D-Bus's) where there
// is one, else its host name. It need not be secret, only unknown to
// whoever wrote a repository.
func readMachineID() string {
	for _, p := range machineIDFiles {
		if b, err := safefile.ReadFile(p, 256); err == nil {
			if id := string(bytes.TrimSpace(b)); id != "" {
				return id
			}
		}
	}
	h, _ := os.Hostname()
	return "host:" + h
}

// machineKey names the per-machine directory of the store directory with
// inode ino.
func machineKey(machineID string, ino uint64) string {
	sum := sha256.Sum256([]byte("baton per-machine state\x00" + machineID + "\x00" + strconv.FormatUint(ino, 10)))
	return MachineDirPrefix + hex.EncodeToString(sum[:8])
}

// machineDir is the per-machine directory, indexes/machine-<key>. Before
// the store directory exists it names none (nothing is there yet); the
// key is kept once found.
func (s *Store) machineDir() string {
	s.machineMu.Lock()
	defer s.machineMu.Unlock()
	if s.machine == "" {
		fi, err := os.Lstat(s.dir)
		if err != nil || !fi.IsDir() {
			return s.path(IndexesDir, MachineDirPrefix+"none")
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return s.path(IndexesDir, MachineDirPrefix+"none")
		}
		if s.machineID == "" {
			s.machineID = readMachineID()
		}
		s.machine = machineKey(s.machineID, uint64(st.Ino))
	}
	return s.path(IndexesDir, s.machine)
}

// IndexDir is the directory of this machine's indexes of the store:
// the per-machine directory (see machineDir). The search index lives
// there too.
func (s *Store) IndexDir() string { return s.machineDir() }

// MakeIndexDir makes IndexDir (and the store's directories on the way,
// none a link) and returns it.
func (s *Store) MakeIndexDir() (string, error) {
	if err := s.mkIndexes(); err != nil {
		return "", err
	}
	return s.machineDir(), nil
}

// indexPath is the per-machine file name.
func (s *Store) indexPath(name string) string { return filepath.Join(s.machineDir(), name) }

// mkIndexes makes the per-machine directory (and the store's on the
// way), refusing links on the way.
func (s *Store) mkIndexes() error {
	if err := s.checkDirs(IndexesDir); err != nil {
		return err
	}
	if err := s.files.MkdirAll(s.path(IndexesDir), 0o755); err != nil {
		return err
	}
	dir := s.machineDir()
	if err := s.files.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return s.checkDirs(IndexesDir)
}

// LoopDigest is what a machine trusts of a loop when it adopts it: its
// prompt, fed to the agent at every stop, and its verify commands, run
// when the agent states the promise. A checkout that changes either
// makes the loop foreign again.
func LoopDigest(l *baton.Loop) string {
	h := sha256.New()
	h.Write([]byte("baton loop v1\x00"))
	h.Write([]byte(l.Prompt))
	for _, v := range l.Verify {
		h.Write([]byte{0})
		h.Write([]byte(v))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
