package agentrun

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton/internal/sandbox"
)

// confining reports whether s asks for a confined run.
func confining(s Spec) bool {
	return s.Confine != nil && s.Confine.Mode != sandbox.ModeOff
}

// boxed reports whether s's agent will run in baton's box: confinement
// asked for and a kernel that can give it.
func boxed(s Spec) bool {
	return confining(s) && sandbox.Probe().Available()
}

// startAgent starts cmd, confined when s asks: the system, the agent's
// working and temporary directories, its CLI's own configuration and
// installation, and what s.Confine.Policy adds. release must be called
// after Wait.
func startAgent(cmd *exec.Cmd, s Spec, p *plan, path, runTmp string, res *Result) (release func(), err error) {
	if s.Confine == nil {
		return func() {}, cmd.Start()
	}
	cf := *s.Confine
	if confining(s) {
		e := sandbox.EnvFrom(cmd.Env)
		own := sandbox.Policy{Write: []string{runTmp}, Read: installation(path, cmd.Dir)}
		if s.Dir != "" {
			own.Write = append(own.Write, s.Dir)
		}
		own = own.Merge(p.kind.configPolicy(e, cmd.Env))
		cf.Policy = sandbox.System(e).Merge(own).Merge(cf.Policy)
	}
	release, res.Sandbox, err = cf.Start(cmd)
	if err == nil {
		// Said with the run, so a person can tell afterwards what the
		// agent could reach.
		note := "baton: the agent runs " + res.Sandbox.String()
		res.Notes = append(res.Notes, note)
		if s.Live != nil {
			fmt.Fprintln(s.Live, note)
		}
	}
	return release, err
}

// installation is where the agent's executable lives, to be read and
// run: its directory, and for an npm package the node_modules it is in
// (its dependencies sit beside it).
func installation(path, dir string) []string {
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return []string{filepath.Dir(path)}
	}
	out := []string{filepath.Dir(path), filepath.Dir(real)}
	if i := strings.Index(real, "/node_modules/"); i >= 0 {
		out = append(out, real[:i+len("/node_modules")])
	}
	return out
}

// configPolicy is what an agent CLI writes of its own: its settings,
// sessions and logs under the home directory.
func (k kind) configPolicy(e sandbox.Env, env []string) sandbox.Policy {
	if e.Home == "" || !filepath.IsAbs(e.Home) {
		return sandbox.Policy{}
	}
	home := func(rel string) string { return filepath.Join(e.Home, rel) }
	var p sandbox.Policy
	switch k {
	case kindClaude:
		dir := envValue(env, "CLAUDE_CONFIG_DIR")
		if !filepath.IsAbs(dir) {
			dir = home(".claude")
		}
		p.Write = []string{dir, home(".claude.json")}
	case kindCodex:
		p.Write = []string{codexHome(env)}
	case kindDroid:
		p.Write = []string{home(".factory")}
	}
	return p
}

// codexHome is where Codex keeps its configuration and sessions for a
// process with env: $CODEX_HOME, else ~/.codex; "" when neither is an
// absolute path.
func codexHome(env []string) string {
	if dir := envValue(env, "CODEX_HOME"); filepath.IsAbs(dir) {
		return dir
	}
	if home := envValue(env, "HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".codex")
	}
	return ""
}
