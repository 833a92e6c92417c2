package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/install"
	"github.com/baton-agent/baton/internal/loop"
	"github.com/baton-agent/baton/internal/proc"
	"github.com/baton-agent/baton/internal/sandbox"
)

// probeResult is one hook command run with a synthetic payload.
type probeResult struct {
	Harness    string  `json:"harness"`
	Event      string  `json:"event"`
	Command    string  `json:"command"`
	OK         bool    `json:"ok"`
	ExitCode   int     `json:"exit_code"`
	Millis     float64 `json:"ms"`
	Problem    string  `json:"problem,omitempty"`
	Detail     string  `json:"detail,omitempty"` // what a probe that passed found
	StdoutHead string  `json:"stdout_head,omitempty"`
}

type doctorReport struct {
	SchemaVersion int              `json:"schema_version"`
	Binary        string           `json:"binary"`
	Version       string           `json:"version"`
	Root          string           `json:"root"`
	HasStore      bool             `json:"has_store"`
	Installs      []install.Status `json:"installs"`
	// Plugins lists, per harness, the settings files that enable baton's
	// plugin (pi: its package).
	Plugins map[string][]string `json:"plugins"`
	Probes  []probeResult       `json:"probes"`
	// Broken lists what is installed but cannot work; doctor exits 1
	// when it is not empty.
	Broken   []string `json:"broken"`
	Warnings []string `json:"warnings"`
	// Sandbox says whether agents and check commands can run confined here.
	Sandbox sandboxReport `json:"sandbox"`
	// GitHub says whom baton acts as on GitHub, per source.
	GitHub githubReport `json:"github"`
	// UnpricedModels lists the models this store's loops spent tokens on
	// that baton has no price for: --max-cost counts nothing for them.
	UnpricedModels []string `json:"unpriced_models"`
	// Setup is what a delivery into this repository runs before its
	// agents (.agent/delivery.json).
	Setup delivery.SetupPlan `json:"setup"`
}

// sandboxReport is what doctor found of the box: Landlock, and a row per
// defence.
type sandboxReport struct {
	Available bool              `json:"available"`
	ABI       int               `json:"abi,omitempty"`
	Detail    string            `json:"detail"`
	Defences  []sandbox.Defence `json:"defences"`
	// Init is the program boxes start as their init.
	Init sandbox.InitChoice `json:"init"`
}

func newDoctorCmd(f *Factory) *cobra.Command {
	var asJSON, noProbe bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Report where baton is installed and whether its hooks answer",
		Long: `For every harness (claude, codex, droid, pi) and scope (project, user), report
the config file, the baton hooks and command files found there, and the
baton binary they call compared with this one. Then run each configured hook
command with a synthetic payload in a scratch directory (never your project's
store) and check its exit code, its output for that harness's contract and
its time. Warnings cover missing or stale binaries, slow hooks, and a
harness installed at both scopes (its hooks would run twice).

It also says whom baton acts as on GitHub: a GitHub App (--github-app-id)
or a token, and, for each source of the delivery database, the account its
requests act as and what it may do (an App installation's permissions, a
classic token's scopes). --no-probe sends no request.

And it shows the set-up a delivery into this repository runs before its
agents (.agent/delivery.json "setup", or the dev container's create
commands with "setup_from": "devcontainer"), or the dev container's
commands it could use; a .agent/delivery.json a delivery would refuse is
broken.`,
		Example: "  baton doctor\n  baton doctor --json\n  baton doctor --no-probe",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep := runDoctor(cmd.Context(), f, !noProbe)
			// Anything installed that is broken fails the command, so
			// scripts and CI can check it.
			fail := func(err error) error {
				if err == nil && len(rep.Broken) > 0 {
					return &ExitCodeError{Code: ExitError}
				}
				return err
			}
			if asJSON {
				return fail(writeJSON(f.IO.Out, rep))
			}
			w := f.IO.Out
			fmt.Fprintf(w, "baton %s at %s\nproject root %s (store: %v)\nsandbox: %s\n", rep.Version, rep.Binary, rep.Root, rep.HasStore, rep.Sandbox.Detail)
			for _, l := range (sandbox.Status{Defences: rep.Sandbox.Defences}).Lines() {
				fmt.Fprintf(w, "  %s\n", l)
			}
			if in := rep.Sandbox.Init; in.Program != "" || in.Why != "" {
				fmt.Fprintf(w, "  box init: %s\n", initLine(in))
			}
			writeGitHub(w, rep.GitHub)
			writeSetup(w, rep.Setup)
			fmt.Fprintln(w)
			for _, hh := range harness.Harnesses {
				if files := rep.Plugins[string(hh.Name)]; len(files) > 0 {
					fmt.Fprintf(w, "%-6s plugin  enabled in %s\n", hh.Name, strings.Join(files, ", "))
				}
			}
			for _, s := range rep.Installs {
				state := "not installed"
				if s.Installed {
					state = fmt.Sprintf("%d hook(s)", len(s.Hooks))
					if h, _ := harness.Lookup(string(s.Harness)); h != nil && h.Extension {
						state = "extension"
					}
				}
				fmt.Fprintf(w, "%-6s %-7s %-13s %d command(s) %d skill(s)  %s\n", s.Harness, s.Scope, state, len(s.Commands), len(s.Skills), s.File)
				if s.MCPCommand != "" {
					fmt.Fprintf(w, "       MCP server: %s mcp  (%s)\n", s.MCPCommand, s.MCPFile)
				}
				if s.Error != "" {
					fmt.Fprintf(w, "       error: %s\n", s.Error)
				}
			}
			if len(rep.Probes) > 0 {
				fmt.Fprintln(w)
			}
			for _, p := range rep.Probes {
				mark := "ok  "
				if !p.OK {
					mark = "FAIL"
				}
				fmt.Fprintf(w, "%s %-6s %-13s %6.1f ms  %s%s\n", mark, p.Harness, p.Event, p.Millis, p.Problem, p.Detail)
			}
			for _, warn := range rep.Warnings {
				fmt.Fprintf(w, "\nwarning: %s", warn)
			}
			if len(rep.Warnings) > 0 {
				fmt.Fprintln(w)
			}
			for _, b := range rep.Broken {
				fmt.Fprintf(w, "\nbroken: %s", b)
			}
			if len(rep.Broken) > 0 {
				fmt.Fprintln(w)
			}
			return fail(nil)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for agents and scripts")
	cmd.Flags().BoolVar(&noProbe, "no-probe", false, "only inspect the config files; run no hooks")
	return cmd
}

func runDoctor(ctx context.Context, f *Factory, probe bool) doctorReport {
	root, how := f.projectRoot()
	rep := doctorReport{SchemaVersion: 1, Binary: f.Executable, Version: f.Version, Root: root, HasStore: f.Store().Exists(),
		Installs: []install.Status{}, Plugins: map[string][]string{}, Probes: []probeResult{}, Warnings: []string{}, Broken: []string{}}
	if how == fsstore.FoundGitRoot || how == fsstore.FoundMarker {
		for _, above := range fsstore.StoresAbove(root) {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("a context store sits above this repository at %s: baton does not use it here, but an earlier baton may have written this repository's packets and loops there; move what you need and remove it if no project owns it", above))
		}
	}
	for _, hh := range harness.Harnesses {
		h := hh.Name
		scopes := 0
		for _, sc := range []install.Scope{install.ScopeProject, install.ScopeUser} {
			t := f.installTargetFor(h, sc, root)
			s := install.Inspect(t)
			rep.Installs = append(rep.Installs, s)
			if s.Error != "" {
				rep.Broken = append(rep.Broken, fmt.Sprintf("%s (%s): %s", h, sc, s.Error))
			}
			if s.MCPCommand != "" && probe {
				rep.Probes = append(rep.Probes, probeMCP(ctx, s, root))
			}
			if !s.Installed {
				continue
			}
			scopes++
			for _, b := range s.Binaries {
				if !filepath.IsAbs(b) {
					rep.Broken = append(rep.Broken, fmt.Sprintf("%s (%s) calls %s from PATH, and there is none on this PATH: install baton or add its directory to PATH", h, sc, b))
					continue
				}
				if fi, err := os.Stat(b); err != nil || fi.Mode()&0o111 == 0 {
					rep.Broken = append(rep.Broken, fmt.Sprintf("%s (%s) calls %s, which is missing or not executable: run `baton install %s --scope %s` again", h, sc, b, h, sc))
				} else if b == f.Executable && harness.Program(f.Executable) != f.Executable {
					rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s (%s) runs its hooks through %s; %s beside it answers them faster: run `baton install %s --scope %s` again", h, sc, b, harness.HookBinary, h, sc))
				} else if b != f.Executable && b != harness.Program(f.Executable) {
					rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s (%s) calls %s, not this binary (%s)", h, sc, b, f.Executable))
				}
			}
			rep.Broken = append(rep.Broken, install.Untrusted(t, s)...)
			if probe {
				rep.Probes = append(rep.Probes, probeHooks(ctx, f, hh, s)...)
			}
		}
		if scopes == 2 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s is installed at both scopes: unless the commands are identical its hooks run twice and a loop advances twice per stop; uninstall one", h))
		}
		enabled, err := install.PluginEnabled(f.installTargetFor(h, install.ScopeProject, root))
		if err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: cannot read whether baton's plugin is enabled: %v", h, err))
		}
		if len(enabled) > 0 {
			rep.Plugins[string(h)] = enabled
			rep.Warnings = append(rep.Warnings, install.PluginUntrusted(f.installTargetFor(h, install.ScopeProject, root))...)
			if scopes > 0 {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s has baton's plugin enabled (%s) and baton's installed hooks: every hook runs twice and a loop advances twice per stop; run `baton uninstall %s` (or disable the plugin)", h, strings.Join(enabled, ", "), h))
			}
		}
	}
	rep.UnpricedModels = unpricedModels(f, &rep)
	if plan, err := delivery.RepositorySetup(root); err != nil {
		rep.Broken = append(rep.Broken, "a delivery into this repository cannot start: "+baton.ErrorMessage(err))
	} else {
		rep.Setup = plan
	}
	rep.Sandbox = checkSandbox(f, probe)
	var ghWarns []string
	rep.GitHub, ghWarns = checkGitHub(ctx, f, probe)
	rep.Warnings = append(rep.Warnings, ghWarns...)
	if !rep.Sandbox.Available {
		rep.Warnings = append(rep.Warnings, "agents cannot be confined here ("+rep.Sandbox.Detail+"): "+sandbox.Exposure)
	}
	if f.DynamicallyLinked {
		rep.Warnings = append(rep.Warnings, "this baton is linked dynamically (built with cgo), which adds about 0.5 ms to every hook: reinstall with CGO_ENABLED=0 go install ./cmd/baton")
	}
	for _, p := range rep.Probes {
		if !p.OK {
			rep.Broken = append(rep.Broken, fmt.Sprintf("%s %s hook failed its probe: %s", p.Harness, p.Event, p.Problem))
		}
	}
	return rep
}

// writeSetup says what a delivery's set-up would run here, or how to
// have one.
func writeSetup(w io.Writer, p delivery.SetupPlan) {
	if len(p.Commands) == 0 {
		fmt.Fprintf(w, "set-up: none (name commands in %s \"setup\")\n", delivery.SourceConfigPath)
		if p.Devcontainer != "" {
			fmt.Fprintf(w, "  %s has %d: `%s`; use them with \"setup_from\": \"devcontainer\"\n", p.Devcontainer, len(p.DevcontainerCommands), strings.Join(p.DevcontainerCommands, "`; `"))
		}
		return
	}
	fmt.Fprintf(w, "set-up: %d command(s) from %s, confined, before the first agent phase and verify:\n", len(p.Commands), p.From)
	for _, c := range p.Commands {
		fmt.Fprintf(w, "  $ %s\n", c)
	}
	fmt.Fprintf(w, "  again when one of these changes: %s\n", strings.Join(p.Files, ", "))
	if len(p.EgressAllow) > 0 {
		fmt.Fprintf(w, "  it alone reaches %s\n", strings.Join(p.EgressAllow, ", "))
	}
}

// unpricedModels lists the models this store's loops ran on that baton
// cannot price, with a warning that says how to price them.
func unpricedModels(f *Factory, rep *doctorReport) []string {
	if !rep.HasStore {
		return []string{}
	}
	prices, err := loop.PricesFromEnv(f.env)
	if err != nil {
		rep.Warnings = append(rep.Warnings, err.Error())
	}
	models, err := loop.SeenUnpriced(f.Store(), prices)
	if err != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("cannot list the loops to find unpriced models: %v", err))
	}
	if len(models) == 0 {
		return []string{}
	}
	rep.Warnings = append(rep.Warnings, fmt.Sprintf("loops here ran on %s, which baton has no price for (docs/hooks.md#prices): --max-cost counts nothing for them; "+
		`set their list prices (US dollars per million tokens) in the agents' environment with BATON_MODEL_PRICES='{"%s": {"input": <USD>, "output": <USD>}}'`,
		strings.Join(models, ", "), models[0]))
	return models
}

// initLine says which program boxes start as their init, and why.
func initLine(in sandbox.InitChoice) string {
	if in.Own {
		return "baton itself (" + in.Why + ")"
	}
	return in.Program + " (" + in.Why + ")"
}

// checkSandbox reports what of the box this host enforces, for the
// confinement the environment asks for; with probe, by confining a
// process for real.
func checkSandbox(f *Factory, probe bool) sandboxReport {
	conf, err := sandbox.Configure(f.env, f.WorkDir, "", nil, nil)
	if err != nil {
		return sandboxReport{Detail: err.Error()}
	}
	st := conf.Status()
	rep := sandboxReport{Available: st.Available(), ABI: st.ABI, Detail: st.String(), Defences: st.Defences}
	if conf.Mode != sandbox.ModeOff {
		rep.Init = sandbox.BoxInit()
	}
	if conf.Mode == sandbox.ModeOff {
		rep.Detail += ": " + sandbox.ModeVar + "=off, agents and check commands run unconfined"
		return rep
	}
	if !rep.Available || !probe {
		if rep.Available {
			rep.Detail += ": agents and check commands run confined"
		}
		return rep
	}
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	cmd.Env = proc.Environ(nil)
	conf.Mode, conf.Home, conf.Cache = sandbox.ModeAuto, "", ""
	conf.Policy = sandbox.System(sandbox.EnvFrom(cmd.Env))
	release, r, err := conf.Start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	release()
	if err != nil || !r.Confined {
		rep.Available = false
		rep.Detail = fmt.Sprintf("%s, but a confined process did not run: %v", st, err)
		return rep
	}
	rep.Detail += ": agents and check commands run confined (probed)"
	return rep
}

// probeHooks runs each of an installation's hook commands with a
// synthetic payload in a scratch project.
func probeHooks(ctx context.Context, f *Factory, h *harness.Harness, s install.Status) []probeResult {
	dir, err := os.MkdirTemp("", "baton-doctor-*")
	if err != nil {
		return []probeResult{{Harness: string(s.Harness), Problem: err.Error()}}
	}
	defer os.RemoveAll(dir)
	// A repository's root, as where hooks really run: hooks create no
	// store outside one.
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		return []probeResult{{Harness: string(s.Harness), Problem: err.Error()}}
	}
	commands := map[harness.Event]string{}
	for _, hk := range s.Hooks {
		if ev, ok := harness.CommandEvent(hk.Command, nil); ok {
			commands[ev] = hk.Command
		}
	}
	if h.Extension && len(s.Binaries) > 0 {
		// The extension runs the hooks itself: probe the commands it runs.
		for _, ev := range harness.Events {
			commands[ev] = harness.Command(s.Binaries[0], ev, h.Name)
		}
	}
	var out []probeResult
	for _, ev := range harness.Events {
		cmdline, ok := commands[ev]
		if !ok {
			continue
		}
		payload := map[string]any{"session_id": "baton-doctor", "cwd": dir, "transcript_path": filepath.Join(dir, "none.jsonl")}
		switch ev {
		case harness.SessionStart:
			payload["source"] = "startup"
		case harness.Stop:
			payload["stop_hook_active"] = false
			payload["last_assistant_message"] = "probe"
		case harness.PostToolUse:
			payload["tool_name"] = h.WriteTools[0]
			payload["tool_input"] = map[string]any{"file_path": filepath.Join(dir, "probe.txt"), "path": filepath.Join(dir, "probe.txt")}
		case harness.PreCompact:
			payload["trigger"] = "manual"
		}
		body, _ := json.Marshal(payload)
		out = append(out, runProbe(ctx, f, h, ev, cmdline, dir, body))
	}
	return out
}

func runProbe(ctx context.Context, f *Factory, h *harness.Harness, ev harness.Event, cmdline, dir string, payload []byte) probeResult {
	r := probeResult{Harness: string(h.Name), Event: string(ev), Command: cmdline}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/sh", "-c", cmdline)
	c.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "BATON_ROOT" || k == "BATON_SESSION_ID" || slices.Contains(harness.SessionVars(), k) {
			continue // the probe must never reach the user's project
		}
		env = append(env, kv)
	}
	c.Env = env
	c.Stdin = bytes.NewReader(payload)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	start := time.Now()
	err := c.Run()
	r.Millis = float64(time.Since(start).Microseconds()) / 1000
	r.ExitCode = c.ProcessState.ExitCode()
	out := stdout.String()
	r.StdoutHead = clip(strings.TrimSpace(out), 80)
	switch {
	case err != nil && r.ExitCode != 0:
		r.Problem = fmt.Sprintf("exit %d: %s", r.ExitCode, clip(strings.TrimSpace(stderr.String()), 200))
	case ev == harness.SessionStart && !h.Extension && !strings.HasPrefix(out, "baton"):
		r.Problem = "session-start printed no context"
	case h.Extension && !json.Valid(stdout.Bytes()):
		r.Problem = fmt.Sprintf("the answer to %s's extension is not JSON", h.Product)
	case !h.Extension && ev != harness.SessionStart && out != "":
		r.Problem = fmt.Sprintf("printed %q where the contract wants nothing", r.StdoutHead)
	case r.Millis > 1000:
		r.Problem = "slower than 1 s"
	default:
		r.OK = true
	}
	return r
}

// probeMCP starts the registered MCP server as the harness would, in the
// project, and lists its tools.
func probeMCP(ctx context.Context, s install.Status, root string) probeResult {
	r := probeResult{Harness: string(s.Harness), Event: "mcp", Command: s.MCPCommand + " mcp"}
	// A file in the project is the checkout's to write: start only the
	// baton on PATH that install writes there, never a program it names.
	if strings.HasPrefix(s.MCPFile, root+string(filepath.Separator)) && s.MCPCommand != "baton" {
		r.Problem = fmt.Sprintf("%s registers `%s mcp`, not `baton mcp`: not started; run `baton install %s` to write baton's entry", s.MCPFile, s.MCPCommand, s.Harness)
		return r
	}
	bin, err := exec.LookPath(s.MCPCommand)
	if err != nil {
		r.Problem = fmt.Sprintf("%s registers `%s mcp`, and %s is not on PATH or not executable", s.MCPFile, s.MCPCommand, s.MCPCommand)
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := exec.Command(bin, "mcp")
	c.Dir = root
	c.Env = proc.Environ(nil) // listing tools needs no token
	start := time.Now()
	client := sdk.NewClient(&sdk.Implementation{Name: "baton-doctor", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: c}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		r.Problem = "the MCP server did not start: " + clip(err.Error(), 200)
		return r
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	r.Millis = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		r.Problem = "tools/list failed: " + clip(err.Error(), 200)
		return r
	}
	var names []string
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	r.StdoutHead = strings.Join(names, ",")
	if len(names) == 0 {
		r.Problem = "the MCP server lists no tools"
		return r
	}
	r.OK = true
	r.Detail = fmt.Sprintf("%d tools: %s", len(names), strings.Join(names, ", "))
	return r
}
