package goaltree

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/proc"
	"github.com/baton-agent/baton/internal/prompt"
)

// Config is state/config.toml. "Attempts per node" and "iterations per
// run" are separate limits: max_attempts bounds the failed attempts of one
// leaf, max_iterations the iterations of one `baton run loop`.
type Config struct {
	Agent     string   // agent: claude, codex, droid, pi or command:<argv>
	Model     string   // model: passed to the agent CLI when set
	AgentArgs []string // agent_args: extra arguments for the agent CLI
	// PassEnv (pass_env) names secrets of baton's environment (GH_TOKEN,
	// BATON_ credentials: proc.Secret) the agent and the guard get
	// anyway; by default they get none.
	PassEnv []string
	// Guard is the command that must pass before a leaf does, run with
	// sh -c in the project root. Steps refuse to run without one.
	Guard              string
	MaxAttempts        int           // max_attempts: per leaf, given to new nodes
	MaxIterations      int           // max_iterations: per `baton run loop`
	IterationTimeout   time.Duration // iteration_timeout: agent and guard share it
	PromptBudget       int           // prompt_budget: bytes
	PromptBudgetTokens int           // prompt_budget_tokens: o200k tokens; 0 means none
	LogMaxBytes        int64         // log_max_bytes: cap per agent stream and for the guard log
	MaxChildren        int           // max_children: per decomposition
	MaxDepth           int           // max_depth: deepest level a node may sit at (root is 0)
}

// DefaultConfig returns the defaults every missing key takes.
func DefaultConfig() Config {
	return Config{
		Agent:            "claude",
		MaxAttempts:      3,
		MaxIterations:    50,
		IterationTimeout: 30 * time.Minute,
		PromptBudget:     prompt.DefaultBudgetBytes,
		LogMaxBytes:      agentrun.DefaultMaxLogBytes,
		MaxChildren:      8,
		MaxDepth:         4,
	}
}

// Limits returns the decomposition limits c sets.
func (c Config) Limits() Limits {
	return Limits{MaxChildren: c.MaxChildren, MaxDepth: c.MaxDepth, MaxAttempts: c.MaxAttempts}
}

// fileConfig mirrors the TOML keys; nil means absent.
type fileConfig struct {
	Agent              *string  `toml:"agent"`
	Model              *string  `toml:"model"`
	AgentArgs          []string `toml:"agent_args"`
	PassEnv            []string `toml:"pass_env"`
	Guard              *string  `toml:"guard"`
	MaxAttempts        *int64   `toml:"max_attempts"`
	MaxIterations      *int64   `toml:"max_iterations"`
	IterationTimeout   *string  `toml:"iteration_timeout"`
	PromptBudget       *int64   `toml:"prompt_budget"`
	PromptBudgetTokens *int64   `toml:"prompt_budget_tokens"`
	LogMaxBytes        *int64   `toml:"log_max_bytes"`
	MaxChildren        *int64   `toml:"max_children"`
	MaxDepth           *int64   `toml:"max_depth"`
}

// maxConfigInt keeps every count far from overflow.
const maxConfigInt = 1 << 40

// parseConfig reads config.toml over the defaults. Unknown keys, wrong
// types, and zero or negative numbers are Invalid errors that name the
// key.
func parseConfig(data []byte) (Config, error) {
	c := DefaultConfig()
	var fc fileConfig
	md, err := toml.Decode(string(data), &fc)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return c, baton.Errorf(baton.Invalid, "config.toml: %s", strings.TrimSpace(pe.Message))
		}
		return c, baton.WrapError(baton.Invalid, err, "config.toml")
	}
	if extra := md.Undecoded(); len(extra) > 0 {
		return c, baton.Errorf(baton.Invalid, "config.toml: unknown key %q (known: agent, model, agent_args, pass_env, guard, max_attempts, max_iterations, iteration_timeout, prompt_budget, prompt_budget_tokens, log_max_bytes, max_children, max_depth)", extra[0].String())
	}
	if fc.Agent != nil {
		c.Agent = strings.TrimSpace(*fc.Agent)
		if c.Agent == "" {
			return c, baton.Errorf(baton.Invalid, "config.toml: agent is empty: use claude, codex, droid, pi or command:<argv>")
		}
	}
	if fc.Model != nil {
		c.Model = strings.TrimSpace(*fc.Model)
	}
	if len(fc.AgentArgs) > 0 {
		c.AgentArgs = fc.AgentArgs
	}
	if len(fc.PassEnv) > 0 {
		if err := proc.CheckPassEnv(fc.PassEnv); err != nil {
			return c, baton.WrapError(baton.Invalid, err, "config.toml: pass_env")
		}
		c.PassEnv = fc.PassEnv
	}
	if fc.Guard != nil {
		c.Guard = strings.TrimSpace(*fc.Guard)
	}
	ints := []struct {
		key string
		v   *int64
		set func(int64)
	}{
		{"max_attempts", fc.MaxAttempts, func(n int64) { c.MaxAttempts = int(n) }},
		{"max_iterations", fc.MaxIterations, func(n int64) { c.MaxIterations = int(n) }},
		{"prompt_budget", fc.PromptBudget, func(n int64) { c.PromptBudget = int(n) }},
		{"prompt_budget_tokens", fc.PromptBudgetTokens, func(n int64) { c.PromptBudgetTokens = int(n) }},
		{"log_max_bytes", fc.LogMaxBytes, func(n int64) { c.LogMaxBytes = n }},
		{"max_children", fc.MaxChildren, func(n int64) { c.MaxChildren = int(n) }},
		{"max_depth", fc.MaxDepth, func(n int64) { c.MaxDepth = int(n) }},
	}
	for _, k := range ints {
		if k.v == nil {
			continue
		}
		if *k.v <= 0 || *k.v > maxConfigInt {
			return c, baton.Errorf(baton.Invalid, "config.toml: %s is %d, want a positive number", k.key, *k.v)
		}
		k.set(*k.v)
	}
	if c.MaxDepth > maxTreeDepth {
		return c, baton.Errorf(baton.Invalid, "config.toml: max_depth is %d, at most %d", c.MaxDepth, maxTreeDepth)
	}
	if fc.IterationTimeout != nil {
		d, err := time.ParseDuration(strings.TrimSpace(*fc.IterationTimeout))
		if err != nil {
			return c, baton.Errorf(baton.Invalid, "config.toml: iteration_timeout %q is not a duration such as \"30m\" or \"1h30m\"", *fc.IterationTimeout)
		}
		if d <= 0 {
			return c, baton.Errorf(baton.Invalid, "config.toml: iteration_timeout is %s, want a positive duration", d)
		}
		c.IterationTimeout = d
	}
	return c, nil
}

// encodeConfig renders c as a commented config.toml that ParseConfig reads
// back to c.
func encodeConfig(c Config) []byte {
	var b strings.Builder
	w := func(comment, key, value string) {
		fmt.Fprintf(&b, "\n# %s\n%s = %s\n", comment, key, value)
	}
	b.WriteString("# baton goal-tree runner configuration. See docs/runner.md.\n")
	w("The agent: claude, codex, droid, pi, or command:<argv> for any program that reads the\n# prompt on stdin and prints its JSON result on stdout. --agent overrides it.", "agent", tomlString(c.Agent))
	if c.Model != "" {
		w("The model the agent CLI should use.", "model", tomlString(c.Model))
	} else {
		b.WriteString("\n# The model the agent CLI should use (default: the CLI's own).\n# model = \"\"\n")
	}
	w("Extra arguments for the agent CLI, e.g. [\"--max-turns\", \"80\"].", "agent_args", tomlStrings(c.AgentArgs))
	w("Secrets of baton's environment the agent and the guard get anyway, e.g. [\"GH_TOKEN\"].\n# By default they get none of GH_TOKEN, GITHUB_TOKEN and baton's BATON_ credentials.", "pass_env", tomlStrings(c.PassEnv))
	w("The guard: a leaf passes only when the agent says done AND this command exits 0.\n# It runs with sh -c in the project root. Steps refuse to run without one.", "guard", tomlString(c.Guard))
	w("Failed attempts (retry, guard failure, agent error) a leaf may use before the run is stuck.", "max_attempts", fmt.Sprint(c.MaxAttempts))
	w("Iterations one `baton run loop` runs before it stops (exit 1).", "max_iterations", fmt.Sprint(c.MaxIterations))
	w("Time for one iteration, shared by the agent and the guard.", "iteration_timeout", tomlString(formatDuration(c.IterationTimeout)))
	w("Prompt budget in bytes; optional sections are dropped to fit. --prompt-budget overrides it.", "prompt_budget", fmt.Sprint(c.PromptBudget))
	if c.PromptBudgetTokens > 0 {
		w("Prompt budget in o200k tokens, checked after the byte budget.", "prompt_budget_tokens", fmt.Sprint(c.PromptBudgetTokens))
	} else {
		b.WriteString("\n# Prompt budget in o200k tokens, checked after the byte budget (default: none).\n# prompt_budget_tokens = 10000\n")
	}
	w("Cap, in bytes, of each agent output stream and of the guard log in an iteration's logs.", "log_max_bytes", fmt.Sprint(c.LogMaxBytes))
	w("Children one decomposition may add; more is rejected as over-decomposition.", "max_children", fmt.Sprint(c.MaxChildren))
	w("How deep decomposition may go (the root is 0): a child at this depth or deeper must be execute.", "max_depth", fmt.Sprint(c.MaxDepth))
	return []byte(b.String())
}

// formatDuration drops zero units: "30m" rather than "30m0s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// tomlString quotes s as a TOML basic string. JSON string escapes are a
// subset of TOML's.
func tomlString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

func tomlStrings(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = tomlString(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// CheckAgent refuses an agent a run cannot name (Invalid): it must be
// claude, codex, droid, pi or command:<argv>.
func CheckAgent(agent string) error {
	_, err := agentrun.Command(agentrun.Spec{Agent: agent})
	return err
}
