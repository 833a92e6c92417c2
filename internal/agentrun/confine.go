package agentrun

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/modelapi"
	"github.com/baton-agent/baton/internal/netpolicy"
	"github.com/baton-agent/baton/internal/safefile"
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
// working and temporary directories, its CLI's own configuration (see
// agentHome) and installation, and what s.Confine.Policy adds; on the
// network, what s.Confine allows and the agent's model API. release
// must be called after Wait; each target the box's network refuses is
// said on live as it happens and kept in res.refusals.
func startAgent(cmd *exec.Cmd, s Spec, p *plan, path, runTmp string, live *liveView, res *Result) (release func(), err error) {
	if s.Confine == nil {
		return func() {}, cmd.Start()
	}
	cf := *s.Confine
	if confining(s) {
		// The model API is read from the user's own configuration, where
		// the agent's environment points before the agent home moves it.
		userEnv := cmd.Env
		e := sandbox.EnvFrom(cmd.Env)
		own := sandbox.Policy{Write: []string{runTmp}, Read: installation(path, cmd.Dir)}
		if s.Dir != "" {
			own.Write = append(own.Write, s.Dir)
		}
		home, env, err := p.kind.agentHome(cf, e, cmd.Env)
		if err != nil {
			return func() {}, newError(baton.Internal, nil, err, "prepare the agent home")
		}
		cmd.Env = mergeEnv(cmd.Env, env)
		own = own.Merge(home)
		cf.Policy = sandbox.System(e).Merge(own).Merge(cf.Policy)
		cf.Network = p.kind.network(cf.Network, userEnv, live, res)
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

// cliState is where an agent CLI keeps its state under the home
// directory, the variable that moves it, and the files of the user's own
// it reads (settings) and keeps up to date (credentials: a token the CLI
// refreshes must reach the user's own sessions, or the next refresh of
// either fails).
type cliState struct {
	dir, dirVar string
	settings    []string // read, never written
	credentials []string // read and written
}

func (k kind) state() (cliState, bool) {
	switch k {
	case kindClaude:
		return cliState{dir: ".claude", dirVar: "CLAUDE_CONFIG_DIR", settings: []string{"settings.json"}, credentials: []string{".credentials.json"}}, true
	case kindCodex:
		return cliState{dir: ".codex", dirVar: "CODEX_HOME", settings: []string{"config.toml"}, credentials: []string{"auth.json"}}, true
	case kindDroid:
		return cliState{dir: ".factory", settings: []string{"settings.json"}, credentials: []string{"auth.json"}}, true
	case kindPi:
		return cliState{dir: filepath.Join(".pi", "agent"), dirVar: "PI_CODING_AGENT_DIR", settings: []string{"settings.json", "models.json"}, credentials: []string{"auth.json"}}, true
	}
	return cliState{}, false
}

// agentHome is what an agent CLI may reach of its own configuration. Its
// state (sessions, logs, the settings it writes) lives in the agent home
// (Confinement.Home), never in the user's: a hook an agent plants there
// never runs in the user's own sessions. Where the box shows the agent
// home at $HOME, the CLI finds its state where it always does, and the
// user's settings and credentials are shown in it; elsewhere the CLI's
// variable points it at the agent home, with a copy of the user's
// settings made at each start.
func (k kind) agentHome(cf sandbox.Confinement, e sandbox.Env, cmdEnv []string) (sandbox.Policy, []string, error) {
	st, ok := k.state()
	if !ok || e.Home == "" || !filepath.IsAbs(e.Home) || cf.Home == "" {
		return sandbox.Policy{}, nil, nil
	}
	own := userStateDir(st, cmdEnv) // the user's
	var env []string
	var p sandbox.Policy
	if cf.ShowsHome() {
		if st.dirVar != "" && own != "" && !withinDir(own, e.Home) {
			// Set outside the home: the view does not show it, so the CLI
			// keeps its state at the usual place in the agent home, with
			// a copy of the user's settings made at each start and their
			// credentials linked, so a refreshed token reaches them.
			dir := filepath.Join(cf.Home, st.dir)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return p, nil, err
			}
			for _, f := range st.settings {
				if err := seed(filepath.Join(own, f), filepath.Join(dir, f)); err != nil {
					return p, nil, err
				}
			}
			for _, f := range st.credentials {
				if err := link(filepath.Join(own, f), filepath.Join(dir, f)); err != nil {
					return p, nil, err
				}
				p.Write = append(p.Write, filepath.Join(own, f))
			}
			return p, append(env, st.dirVar+"="+filepath.Join(e.Home, st.dir)), nil
		}
		for _, f := range st.settings {
			p.Read = append(p.Read, filepath.Join(own, f))
		}
		for _, f := range st.credentials {
			p.Write = append(p.Write, filepath.Join(own, f))
		}
		return p, env, nil
	}
	dir := filepath.Join(cf.Home, st.dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return p, nil, err
	}
	for _, f := range st.settings {
		if err := seed(filepath.Join(own, f), filepath.Join(dir, f)); err != nil {
			return p, nil, err
		}
	}
	if st.dirVar != "" {
		env = append(env, st.dirVar+"="+dir)
	}
	p.Write = []string{dir}
	return p, env, nil
}

// seed copies the user's file from to the agent home's to, replacing what
// an agent may have written there; a missing from removes to.
func seed(from, to string) error {
	b, err := safefile.ReadFileFollow(from, 4<<20) // the user's own: a dotfiles link is theirs
	if errors.Is(err, fs.ErrNotExist) {
		err = os.Remove(to)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	return safefile.WriteAtomic(to, b, 0o600)
}

// link makes to a link to the user's file from, replacing whatever an
// agent left at to; a missing from removes to.
func link(from, to string) error {
	if err := os.Remove(to); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return os.Symlink(from, to)
}

// userStateDir is where the CLI keeps its state for a process with env,
// outside any box: $<dirVar> when set, else ~/<dir>; "" when neither is
// an absolute path.
func userStateDir(st cliState, env []string) string {
	if st.dirVar != "" {
		if dir := envValue(env, st.dirVar); filepath.IsAbs(dir) {
			return dir
		}
	}
	if home := envValue(env, "HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, st.dir)
	}
	return ""
}

// stateDir is where, on the host, the CLI of a run under s keeps its
// state (Codex's session files, which name the model): in the agent home
// when the run is boxed with one (see agentHome).
func (k kind) stateDir(s Spec, env []string) string {
	st, ok := k.state()
	if !ok {
		return ""
	}
	user := userStateDir(st, env)
	if !confining(s) || s.Confine.Home == "" {
		return user
	}
	home := envValue(env, "HOME")
	if !filepath.IsAbs(home) {
		return user
	}
	if s.Confine.ShowsHome() && withinDir(user, home) {
		rel, _ := filepath.Rel(home, user)
		return filepath.Join(s.Confine.Home, rel)
	}
	return filepath.Join(s.Confine.Home, st.dir)
}

// withinDir reports whether path is dir or lies beneath it.
func withinDir(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// harness is the agent CLI k runs; "" for a command.
func (k kind) harness() baton.Harness {
	switch k {
	case kindClaude:
		return baton.HarnessClaude
	case kindCodex:
		return baton.HarnessCodex
	case kindDroid:
		return baton.HarnessDroid
	case kindPi:
		return baton.HarnessPi
	}
	return ""
}

// network is n with the agent's model API allowed, read from its own
// configuration under env (modelapi), and its refusals said on live and
// kept in res. An entry the box cannot allow is said, not fatal: the
// agent then fails to reach its model, and says so itself.
func (k kind) network(n sandbox.Network, env []string, live *liveView, res *Result) sandbox.Network {
	if h := k.harness(); h != "" && !n.Open {
		hosts, err := modelapi.Hosts(h, env)
		if err != nil {
			res.note(live, "baton: the box may not reach the agent's model API: "+baton.ErrorMessage(err))
		}
		for _, host := range hosts {
			a, err := netpolicy.Parse(host)
			if err != nil {
				res.note(live, "baton: the box cannot allow the agent's model API "+host+": "+baton.ErrorMessage(err))
				continue
			}
			n.Allow = n.Allow.With(a)
		}
	}
	res.refusals = &netpolicy.Refusals{}
	outer := n.OnRefuse
	n.OnRefuse = func(r netpolicy.Refusal) {
		if res.refusals.Add(r) {
			live.note("baton: network:", r.String())
		}
		if outer != nil {
			outer(r)
		}
	}
	return n
}
