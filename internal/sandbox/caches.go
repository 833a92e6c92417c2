package sandbox

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// caches gives what runs in the box build caches of its own, in c.Cache
// (none when that is ""): the environment that points the tools at them,
// and the policy that grants them. The
// user's own caches are never written: a module, package or build
// artefact planted there would run in the user's next unconfined build.
// Go modules the user already downloaded are read from the user's module
// cache, as a proxy before the configured one, so a build inside the box
// needs no network for them.
func (c Confinement) caches(env []string) (add []string, p Policy, cleanup func(), err error) {
	cleanup = func() {}
	dir := c.Cache
	if dir == "" {
		return nil, p, cleanup, nil
	}
	sub := map[string]string{
		"GOMODCACHE":            "go/mod",
		"GOCACHE":               "go/build",
		"npm_config_cache":      "npm",
		"npm_config_store_dir":  "pnpm",
		"XDG_CACHE_HOME":        "xdg",
		"CARGO_HOME":            "cargo",
		"BUN_INSTALL_CACHE_DIR": "bun",
	}
	for _, name := range []string{"GOMODCACHE", "GOCACHE", "npm_config_cache", "npm_config_store_dir", "XDG_CACHE_HOME", "CARGO_HOME", "BUN_INSTALL_CACHE_DIR"} {
		d := filepath.Join(dir, sub[name])
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, p, cleanup, err
		}
		add = append(add, name+"="+d)
	}
	// The box may remove what Go puts in its module cache (read-only by
	// default), so a cache of a single start can be removed after it.
	if flags := envValue(env, "GOFLAGS"); !strings.Contains(flags, "-modcacherw") {
		add = append(add, "GOFLAGS="+strings.TrimSpace(flags+" -modcacherw"))
	}
	p.Write = []string{dir}
	var local []string
	if c.SetupCache != "" {
		// What the repository's set-up downloaded, read-only.
		p.Read = append(p.Read, c.SetupCache)
		if dl := filepath.Join(c.SetupCache, "go", "mod", "cache", "download"); isDir(dl) {
			local = append(local, "file://"+dl)
		}
	}
	if dl := userGoDownloads(env); dl != "" {
		p.Read = append(p.Read, dl)
		local = append(local, "file://"+dl)
	}
	if len(local) > 0 {
		add = append(add, "GOPROXY="+goProxyBefore(strings.Join(local, ","), goProxy(env)))
	}
	return add, p, cleanup, nil
}

// userGoDownloads is the download cache of the user's Go module cache,
// when there is one.
func userGoDownloads(env []string) string {
	mod := envValue(env, "GOMODCACHE")
	if !filepath.IsAbs(mod) {
		gopath := filepath.SplitList(envValue(env, "GOPATH"))
		home := envValue(env, "HOME")
		switch {
		case len(gopath) > 0 && filepath.IsAbs(gopath[0]):
			mod = filepath.Join(gopath[0], "pkg", "mod")
		case filepath.IsAbs(home):
			mod = filepath.Join(home, "go", "pkg", "mod")
		default:
			return ""
		}
	}
	dl := filepath.Join(mod, "cache", "download")
	if !isDir(dl) {
		return ""
	}
	return dl
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// goProxy is the proxy list Go would use with env: GOPROXY, else the
// one `go env -w` wrote, else Go's default.
func goProxy(env []string) string {
	if v := envValue(env, "GOPROXY"); v != "" {
		return v
	}
	cfg := envValue(env, "XDG_CONFIG_HOME")
	if !filepath.IsAbs(cfg) {
		home := envValue(env, "HOME")
		if !filepath.IsAbs(home) {
			return "https://proxy.golang.org,direct"
		}
		cfg = filepath.Join(home, ".config")
	}
	if f, err := os.Open(filepath.Join(cfg, "go", "env")); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
		v := ""
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "GOPROXY="); ok {
				v = rest
			}
		}
		if v != "" {
			return v
		}
	}
	return "https://proxy.golang.org,direct"
}

// goProxyBefore puts first before the proxies of list; "off" (no network
// at all) keeps only first, which is local.
func goProxyBefore(first, list string) string {
	if list == "off" || list == "" {
		return first
	}
	return first + "," + list
}
