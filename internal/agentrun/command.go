package agentrun

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton"
)

// kind is an executor.
type kind int

const (
	kindClaude kind = iota + 1
	kindCodex
	kindDroid
	kindPi
	kindCommand
)

func (k kind) String() string {
	switch k {
	case kindClaude:
		return "claude"
	case kindCodex:
		return "codex"
	case kindDroid:
		return "droid"
	case kindPi:
		return "pi"
	case kindCommand:
		return "command"
	}
	return "unknown"
}

// tempDirPlaceholder stands for the temporary directory Run creates for
// codex's schema and last-message files when Spec.LogDir is empty; Command
// cannot know its name in advance.
const tempDirPlaceholder = "<tempdir>"

// plan is everything Run needs to start the agent.
type plan struct {
	kind        kind
	argv        []string
	stdin       string   // the exact prompt bytes
	env         []string // added after Spec.Env
	schema      []byte   // compact schema, nil without one
	schemaPath  string   // codex and command agents: where the schema file goes
	lastMsgPath string   // codex: --output-last-message
	// jsonl: stdout is JSON lines, logged as EventsLog (else StdoutLog).
	jsonl bool
}

// Command returns the exact argv Run would start for s (argv[0] is the
// executable's name as looked up on PATH). When s.LogDir is empty, codex's
// file arguments show "<tempdir>" for the directory Run creates. It returns
// an Invalid error wrapping ErrInvalidSpec when s cannot be run.
func Command(s Spec) ([]string, error) {
	dir := s.LogDir
	if dir == "" {
		dir = tempDirPlaceholder
	}
	p, err := newPlan(s, dir)
	if err != nil {
		return nil, err
	}
	return p.argv, nil
}

// newPlan builds the command line; fileDir is where files named in argv go.
func newPlan(s Spec, fileDir string) (*plan, error) {
	k, cmdArgv, err := parseAgent(s.Agent)
	if err != nil {
		return nil, err
	}
	p := &plan{kind: k}
	if s.Resume != "" && !validSession(s.Resume) {
		// It came from an agent's output: never a flag, never a path.
		return nil, invalidSpec("session %q to resume is not a session id", baton.Truncate(s.Resume, 60, "…"))
	}
	if len(bytes.TrimSpace(s.OutputSchema)) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, s.OutputSchema); err != nil {
			return nil, invalidSpec("output schema is not valid JSON: %v", err)
		}
		if buf.Bytes()[0] != '{' {
			return nil, invalidSpec("output schema must be a JSON object")
		}
		// Refused before the agent runs, not after: its answer could
		// never be checked.
		if _, err := compileSchema(buf.Bytes()); err != nil {
			return nil, invalidSpec("output %v", err)
		}
		p.schema = buf.Bytes()
	}
	prependSystem := func() string {
		if s.SystemPrompt == "" {
			return s.Prompt
		}
		return s.SystemPrompt + "\n\n" + s.Prompt
	}
	extra := s.ExtraArgs
	quiet := allowlisted(s)
	switch k {
	case kindClaude:
		if quiet {
			p.env = append(p.env, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1",
				"DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1")
		}
		p.stdin, p.jsonl = s.Prompt, true
		a := []string{"claude", "-p", "--output-format", "stream-json", "--verbose"}
		if p.schema != nil {
			a = append(a, "--json-schema", string(p.schema))
		}
		if s.SystemPrompt != "" {
			a = append(a, "--append-system-prompt", s.SystemPrompt)
		}
		if s.Model != "" {
			a = append(a, "--model", s.Model)
		}
		if !hasFlag(extra, "--permission-mode", "--dangerously-skip-permissions") {
			a = append(a, "--permission-mode", "acceptEdits")
		}
		if !hasFlag(extra, "--allowedTools", "--allowed-tools") {
			a = append(a, "--allowedTools", DefaultClaudeAllowedTools)
		}
		if s.Resume != "" {
			a = append(a, "--resume", s.Resume)
		}
		p.argv = append(a, extra...)
	case kindCodex:
		p.stdin, p.jsonl = prependSystem(), true
		if s.Resume != "" {
			p.stdin = s.Prompt // the session has its system prompt
		}
		a := []string{"codex", "exec", "--json"}
		if !hasFlag(extra, "--sandbox", "-s", "--dangerously-bypass-approvals-and-sandbox", "--yolo") {
			a = append(a, "--sandbox", codexSandbox(s))
		}
		a = append(a, "--skip-git-repo-check")
		if s.Dir != "" {
			a = append(a, "-C", s.Dir)
		}
		if p.schema != nil {
			p.schemaPath = filepath.Join(fileDir, SchemaFile)
			a = append(a, "--output-schema", p.schemaPath)
		}
		p.lastMsgPath = filepath.Join(fileDir, LastMessageFile)
		a = append(a, "--output-last-message", p.lastMsgPath)
		if s.Model != "" {
			a = append(a, "-m", s.Model)
		}
		if quiet {
			// Analytics (ab.chatgpt.com), the apps directory (chatgpt.com)
			// and the curated plugins' sync (github.com); before extra, so
			// the user's -c wins.
			a = append(a, "-c", "analytics.enabled=false", "-c", "features.apps=false",
				"-c", "features.plugins=false", "-c", "features.remote_plugin=false")
		}
		a = append(a, extra...)
		if s.Resume != "" {
			// exec's options stay before the subcommand; only the
			// conversation is kept, so they are all given again.
			a = append(a, "resume", s.Resume)
		}
		p.argv = append(a, "-") // "-": read the prompt from stdin
	case kindDroid:
		if quiet {
			// Its traces and its update check. Its event log (posted to
			// telemetry.factory.ai every 20 s) and its metrics (to a
			// collector on run.app) go out whatever it is told, short of
			// airgap mode, which would also cut off Factory's models: a
			// data: URL as their base keeps both in the process.
			p.env = append(p.env, "OTEL_SDK_DISABLED=true", "DO_NOT_TRACK=1", "FACTORY_DROID_AUTO_UPDATE_ENABLED=false",
				"FACTORY_TELEMETRY_INGEST_BASE_URL=data:,")
			if os.Getenv("OTEL_CUSTOMER_ENDPOINT") == "" { // else the user's own collector
				p.env = append(p.env, "OTEL_CUSTOMER_ENDPOINT=data:,")
			}
		}
		p.stdin = s.Prompt
		a := []string{"droid", "exec"}
		if !hasFlag(extra, "-o", "--output-format") {
			// Events as they happen (tool calls and their failures, for the
			// live view), where -o json prints one object at the end.
			a = append(a, "-o", "stream-json")
			p.jsonl = true
		}
		if !hasFlag(extra, "--auto", "--skip-permissions-unsafe") {
			a = append(a, "--auto", "medium")
		}
		if s.Dir != "" {
			a = append(a, "--cwd", s.Dir)
		}
		if s.Model != "" {
			a = append(a, "-m", s.Model)
		}
		if s.SystemPrompt != "" {
			a = append(a, "--append-system-prompt", s.SystemPrompt)
		}
		if s.Resume != "" {
			a = append(a, "-s", s.Resume)
		}
		p.argv = append(a, extra...)
	case kindPi:
		// pi reads the prompt from stdin in print mode. A repository's
		// .pi/ (its extensions, skills, settings) is not trusted: no -a.
		// --offline keeps pi from its startup fetches (update checks,
		// model catalogs); its model requests are not affected.
		p.stdin, p.jsonl = s.Prompt, true
		a := []string{"pi", "-p", "--mode", "json", "--offline"}
		if s.SystemPrompt != "" {
			a = append(a, "--append-system-prompt", s.SystemPrompt)
		}
		if s.Model != "" {
			a = append(a, "--model", s.Model)
		}
		if s.Resume != "" {
			a = append(a, "--session", s.Resume)
		}
		p.argv = append(a, extra...)
	case kindCommand:
		p.stdin = prependSystem()
		if s.Resume != "" {
			p.stdin = s.Prompt
			p.env = append(p.env, "BATON_AGENT_RESUME="+s.Resume)
		}
		p.argv = append(cmdArgv, extra...)
		if s.Model != "" {
			p.env = append(p.env, "BATON_AGENT_MODEL="+s.Model)
		}
		if p.schema != nil {
			p.schemaPath = filepath.Join(fileDir, SchemaFile)
			p.env = append(p.env, "BATON_AGENT_OUTPUT_SCHEMA="+p.schemaPath)
		}
	}
	return p, nil
}

// allowlisted reports whether s's agent runs in a box whose network
// reaches only an allowlist. There the CLI is told to keep to itself
// what it sends besides its model requests (telemetry, error reports,
// update checks, plugin syncs): the box would refuse each, and every
// refusal is said in the run's log and on the pull request, where it
// would hide the refusals that matter.
func allowlisted(s Spec) bool {
	return boxed(s) && !s.Confine.Network.Open
}

// codexSandbox is the sandbox Codex is told to apply itself. Codex's own
// is bubblewrap, which needs namespaces baton's box does not hand on: in
// the box every shell call of a workspace-write Codex fails ("error
// building bubblewrap command") and so does every patch. So a boxed
// Codex is told it has full access, which is what baton's box allows it;
// an unboxed one (--sandbox=off, or a kernel baton cannot confine on)
// keeps its own workspace-write sandbox.
func codexSandbox(s Spec) string {
	if boxed(s) {
		return "danger-full-access"
	}
	return "workspace-write"
}

// ResumesOffline reports whether agent can resume a session on this
// machine alone (Spec.Resume). Droid cannot: `droid exec -s` fetches the
// session from Factory's service, and fails offline and with a model of
// one's own ("Failed to fetch session"), so a stopped Droid run is
// started again instead. An unknown agent reports false.
func ResumesOffline(agent string) bool {
	k, _, err := parseAgent(agent)
	return err == nil && k != kindDroid
}

// parseAgent resolves an agent name; for "command:<argv>" it also returns
// the split argv.
func parseAgent(agent string) (kind, []string, error) {
	switch agent {
	case "claude":
		return kindClaude, nil, nil
	case "codex":
		return kindCodex, nil, nil
	case "droid":
		return kindDroid, nil, nil
	case "pi":
		return kindPi, nil, nil
	case "":
		return 0, nil, invalidSpec("no agent given: use claude, codex, droid, pi or command:<argv>")
	}
	rest, ok := strings.CutPrefix(agent, "command:")
	if !ok {
		return 0, nil, invalidSpec("unknown agent %q: use claude, codex, droid, pi or command:<argv>", agent)
	}
	argv, err := SplitArgs(rest)
	if err != nil {
		return 0, nil, invalidSpec("agent %q: %v", agent, err)
	}
	if len(argv) == 0 {
		return 0, nil, invalidSpec("agent %q names no program: write command:<program> [args]", agent)
	}
	return kindCommand, argv, nil
}

// hasFlag reports whether args set one of the flags, as "--f", "--f=v" or
// (for short flags) "-f".
func hasFlag(args []string, flags ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		for _, f := range flags {
			if a == f || (strings.HasPrefix(f, "--") && strings.HasPrefix(a, f+"=")) {
				return true
			}
		}
	}
	return false
}

// validSession reports whether s can be a session id on a command line:
// letters, digits and . _ : - only, not starting with a dash, at most 200
// bytes.
func validSession(s string) bool {
	if s == "" || len(s) > 200 || s[0] == '-' || s[0] == '.' {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}
