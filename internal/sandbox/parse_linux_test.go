package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzStatPPID builds stat lines around any program name (the kernel
// keeps its first 15 bytes, parentheses and spaces included) and wants
// the parent's pid back.
func FuzzStatPPID(f *testing.F) {
	f.Add("sh", 1, 0)
	f.Add("a) S 99 (b", 4242, 7)
	f.Add("", 0, 1)
	f.Fuzz(func(t *testing.T, comm string, ppid, pgrp int) {
		if ppid < 0 || pgrp < 0 || strings.ContainsAny(comm, "\x00\n") {
			return
		}
		if len(comm) > 15 {
			comm = comm[:15]
		}
		line := fmt.Sprintf("123 (%s) S %d %d %d 0 -1 4194560 0 0\n", comm, ppid, pgrp, pgrp)
		got, ok := statPPID([]byte(line))
		if !ok || got != ppid {
			t.Fatalf("statPPID(%q) = %d, %v; want %d", line, got, ok, ppid)
		}
	})
}

// escapeMount escapes a path as /proc/self/mountinfo does.
func escapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\\':
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// FuzzUnescapeMount: whatever a path holds, mountinfo's escaping undone
// gives it back.
func FuzzUnescapeMount(f *testing.F) {
	f.Add("/sys/fs/cgroup")
	f.Add(`/mnt/with space/and\back`)
	f.Add("\\0")
	f.Fuzz(func(t *testing.T, path string) {
		if got := unescapeMount(escapeMount(path)); got != path {
			t.Fatalf("unescapeMount(escape(%q)) = %q", path, got)
		}
	})
}

// FuzzCgroupDir places this process's cgroup, a path of any names, under
// a cgroup mount at any place (mounted from the hierarchy's root, or from
// a cgroup above ours, as a container sees it) and wants the directory
// back.
func FuzzCgroupDir(f *testing.F) {
	f.Add("/sys/fs/cgroup", "user.slice/u", 0, true)
	f.Add("/sys/fs/cgroup/pids", "docker/abc", 1, false)
	f.Add("/mnt/c g", "a b/c", 0, true)
	f.Fuzz(func(t *testing.T, mount, rel string, above int, v2 bool) {
		if !filepath.IsAbs(mount) || strings.ContainsAny(mount+rel, "\x00\n\r:") || strings.Contains(rel, "..") {
			return
		}
		own := "/" + strings.Trim(filepath.Clean("/"+rel), "/")
		parts := strings.Split(strings.Trim(own, "/"), "/")
		if above < 0 || above > len(parts) || own == "/" {
			return
		}
		root := "/" + strings.Join(parts[:above], "/") // what the mount shows the hierarchy from
		cgroups := "9:name=systemd:/\n"
		fstype, opts := "cgroup2", "rw"
		if v2 {
			cgroups += "0::" + own + "\n"
		} else {
			cgroups += "8:pids:" + own + "\n"
			fstype, opts = "cgroup", "rw,pids"
		}
		mountinfo := fmt.Sprintf("30 25 0:26 / /proc rw - proc proc rw\n41 30 0:36 %s %s rw,relatime shared:9 - %s cgroup %s\n",
			escapeMount(root), escapeMount(filepath.Clean(mount)), fstype, opts)
		got := cgroupDir([]byte(cgroups), []byte(mountinfo), v2)
		want := filepath.Join(filepath.Clean(mount), strings.TrimPrefix(own, root))
		if got != want {
			t.Fatalf("cgroupDir(%q, %q, v2 %v) = %q, want %q", cgroups, mountinfo, v2, got, want)
		}
	})
}
