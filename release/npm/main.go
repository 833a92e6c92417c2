// Command npm makes baton's npm packages from the release archives: one
// package per platform holding the binary (with os and cpu set, so npm
// installs only the one that fits), and @baton-agent/baton, which depends
// on all of them optionally and puts `baton` on PATH. Nothing is
// downloaded at install time.
//
//	go run ./release/npm -dist dist -version 0.1.0 -out dist/npm
//
// Then `npm pack` or `npm publish` each directory under -out, the
// platform packages first.
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

const scope = "@baton-agent"

// npm's names for Go's platforms.
var (
	npmOS   = map[string]string{"linux": "linux", "darwin": "darwin", "windows": "win32"}
	npmArch = map[string]string{"amd64": "x64", "arm64": "arm64"}
)

var archiveName = regexp.MustCompile(`^baton_(.+)_(linux|darwin|windows)_(amd64|arm64)\.(tar\.gz|zip)$`)

func main() {
	dist := flag.String("dist", "dist", "the directory holding the release archives")
	version := flag.String("version", "", "the version of the packages (default: the archives')")
	out := flag.String("out", "dist/npm", "where to write the packages")
	flag.Parse()
	if err := run(*dist, *version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "npm:", err)
		os.Exit(1)
	}
}

type pkgJSON struct {
	Name                 string            `json:"name"`
	Version              string            `json:"version"`
	Description          string            `json:"description"`
	License              string            `json:"license"`
	Homepage             string            `json:"homepage"`
	Repository           map[string]string `json:"repository"`
	OS                   []string          `json:"os,omitempty"`
	CPU                  []string          `json:"cpu,omitempty"`
	Bin                  map[string]string `json:"bin,omitempty"`
	Files                []string          `json:"files"`
	Scripts              map[string]string `json:"scripts,omitempty"`
	OptionalDependencies map[string]string `json:"optionalDependencies,omitempty"`
	Engines              map[string]string `json:"engines,omitempty"`
	PreferUnplugged      bool              `json:"preferUnplugged,omitempty"`
}

func newPkg(name, version, desc string) pkgJSON {
	return pkgJSON{
		Name: name, Version: version, Description: desc, License: "MIT",
		Homepage:   "https://github.com/baton-agent/baton",
		Repository: map[string]string{"type": "git", "url": "git+https://github.com/baton-agent/baton.git"},
	}
}

func run(dist, version, out string) error {
	entries, err := os.ReadDir(dist)
	if err != nil {
		return err
	}
	top := newPkg(scope+"/baton", version, "baton gives coding agents the right context at every step, and keeps it")
	// Both programs go on PATH, under their own names: a harness finds
	// baton-hook there (the plugin's shim, pi's extension), and beside the
	// binary `baton install` resolves (hook.Program). The files start as
	// node shims; the install script puts the native binaries in their
	// place.
	top.Bin = map[string]string{"baton": "bin/baton", "baton-hook": "bin/baton-hook"}
	top.Files = []string{"bin/", "install.js", "README.md", "LICENSE"}
	top.Scripts = map[string]string{"postinstall": "node install.js"}
	top.OptionalDependencies = map[string]string{}
	top.Engines = map[string]string{"node": ">=18"}
	n := 0
	for _, e := range entries {
		m := archiveName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		v, goos, goarch := m[1], m[2], m[3]
		if version == "" {
			version = v
		}
		if v != version {
			return fmt.Errorf("%s is version %s, not %s", e.Name(), v, version)
		}
		name := scope + "/baton-" + npmOS[goos] + "-" + npmArch[goarch]
		dir := filepath.Join(out, "baton-"+npmOS[goos]+"-"+npmArch[goarch])
		if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
			return err
		}
		// baton-hook beside baton: `baton install` writes the companion
		// into a harness's settings when it sits next to the binary;
		// baton-box-init too, on Linux: baton starts it as its boxes'
		// init when it lies beside baton's executable.
		for _, bin := range []string{"baton", "baton-hook", "baton-box-init"} {
			if goos == "windows" {
				bin += ".exe"
			}
			if bin == "baton-box-init" && goos != "linux" {
				continue
			}
			if err := extract(filepath.Join(dist, e.Name()), bin, filepath.Join(dir, "bin", bin)); err != nil {
				return fmt.Errorf("%s: %w", e.Name(), err)
			}
		}
		p := newPkg(name, version, "The baton binary for "+goos+"/"+goarch+" (installed by "+scope+"/baton)")
		p.OS, p.CPU = []string{npmOS[goos]}, []string{npmArch[goarch]}
		p.Files = []string{"bin/"}
		p.PreferUnplugged = true
		if err := writeJSON(filepath.Join(dir, "package.json"), p); err != nil {
			return err
		}
		top.OptionalDependencies[name] = version
		n++
	}
	if n == 0 {
		return fmt.Errorf("no release archives (baton_<version>_<os>_<arch>.tar.gz or .zip) in %s", dist)
	}
	top.Version = version
	dir := filepath.Join(out, "baton")
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		path, content string
		mode          os.FileMode
	}{
		{"bin/baton", shim("baton"), 0o755},
		{"bin/baton-hook", shim("baton-hook"), 0o755},
		{"install.js", postinstall, 0o644},
		{"README.md", readme, 0o644},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.path), []byte(f.content), f.mode); err != nil {
			return err
		}
	}
	if lic, err := os.ReadFile("LICENSE"); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "LICENSE"), lic, 0o644); err != nil {
			return err
		}
	}
	if err := writeJSON(filepath.Join(dir, "package.json"), top); err != nil {
		return err
	}
	names := make([]string, 0, len(top.OptionalDependencies))
	for k := range top.OptionalDependencies {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Printf("wrote %s %s and %d platform package(s): %s\n", top.Name, version, n, strings.Join(names, " "))
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// extract copies the file called name at the top of an archive to dst.
func extract(archive, name, dst string) error {
	write := func(r io.Reader) error {
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	if strings.HasSuffix(archive, ".zip") {
		z, err := zip.OpenReader(archive)
		if err != nil {
			return err
		}
		defer z.Close()
		for _, f := range z.File {
			if f.Name == name {
				r, err := f.Open()
				if err != nil {
					return err
				}
				defer r.Close()
				return write(r)
			}
		}
		return errors.New("no " + name + " in it")
	}
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return errors.New("no " + name + " in it")
		}
		if err != nil {
			return err
		}
		if h.Name == name && h.Typeflag == tar.TypeReg {
			return write(tr)
		}
	}
}

// shim is the node script that runs the platform package's binary name,
// passing arguments, standard streams, the exit status and signals
// through. baton-hook fails open, as every hook of baton's does: without
// its binary it says so on stderr and exits 0, so the session goes on.
func shim(name string) string {
	return `#!/usr/bin/env node
"use strict";
require("../install.js").run(` + strconv.Quote(name) + `);
`
}

// postinstall puts the native binaries where the shims are, so that
// `baton` and `baton-hook` on PATH start without node (hooks run on every
// tool call), and baton-box-init beside them (no shim: baton starts it). It copies what npm already installed; it downloads nothing,
// and when it cannot (Windows, --ignore-scripts) the shims keep working.
const postinstall = `"use strict";
const fs = require("fs");
const path = require("path");
const { spawnSync } = require("child_process");

const platforms = {
  "linux-x64": "baton-linux-x64", "linux-arm64": "baton-linux-arm64",
  "darwin-x64": "baton-darwin-x64", "darwin-arm64": "baton-darwin-arm64",
  "win32-x64": "baton-win32-x64", "win32-arm64": "baton-win32-arm64",
};
const programs = ["baton", "baton-hook"];
// Copied beside the programs: baton's boxes' init (Linux only).
const companions = ["baton-box-init"];

// binaryPath is the native program name of this machine's platform
// package, null when npm installed none.
function binaryPath(name) {
  const pkg = platforms[process.platform + "-" + process.arch];
  if (!pkg) return null;
  const exe = process.platform === "win32" ? name + ".exe" : name;
  try {
    return require.resolve("` + scope + `/" + pkg + "/bin/" + exe);
  } catch (e) {
    return null;
  }
}

function run(name) {
  const failOpen = name === "baton-hook";
  const bin = binaryPath(name);
  if (!bin) {
    console.error(name + ": no binary for " + process.platform + "/" + process.arch + " was installed; " +
      "reinstall without --no-optional, or get baton another way: https://github.com/baton-agent/baton#install");
    process.exit(failOpen ? 0 : 1);
  }
  const r = spawnSync(bin, process.argv.slice(2), { stdio: "inherit" });
  if (r.error) {
    console.error(name + ": " + r.error.message);
    process.exit(failOpen ? 0 : 1);
  }
  if (r.signal) {
    process.kill(process.pid, r.signal);
  }
  process.exit(r.status === null ? 1 : r.status);
}

module.exports = { binaryPath, run };

if (require.main === module && process.platform !== "win32") {
  for (const name of programs.concat(companions)) {
    const bin = binaryPath(name);
    const shim = path.join(__dirname, "bin", name);
    if (!bin) continue;
    try {
      const tmp = shim + ".tmp";
      fs.copyFileSync(bin, tmp);
      fs.chmodSync(tmp, 0o755);
      fs.renameSync(tmp, shim);
    } catch (e) {
      // The shim stays; the program works, a little slower to start.
    }
  }
}
`

const readme = `# @baton-agent/baton

baton gives coding agents the right context at every step, and keeps it: handoff packets and
loops in a project-local store, hooks for Claude Code, Codex, Factory Droid and pi, task briefs,
a goal-tree runner and a delivery pipeline from issue to merged pull request.

    npm install -g @baton-agent/baton
    baton quickstart

This package holds no binary itself: npm installs the one package of
` + "`@baton-agent/baton-<os>-<cpu>`" + ` that fits this machine. See
https://github.com/baton-agent/baton for everything else.
`
