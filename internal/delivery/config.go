package delivery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/netpolicy"
	"github.com/baton-agent/baton/internal/proc"
)

// SourceConfigPath is where a repository keeps its delivery settings,
// relative to its root. Flags on `baton delivery create` win over it.
const SourceConfigPath = ".agent/delivery.json"

// SourceConfig is a repository's delivery settings: every field is
// optional. Durations are Go duration strings ("10m", "90s").
type SourceConfig struct {
	Agent         string   `json:"agent,omitempty"`
	Model         string   `json:"model,omitempty"`
	Endpoint      string   `json:"endpoint,omitempty"`
	Checkpoints   []string `json:"checkpoints,omitempty"`
	Base          string   `json:"base,omitempty"`
	Verify        string   `json:"verify,omitempty"`
	Deploy        string   `json:"deploy,omitempty"`
	Observe       string   `json:"observe,omitempty"`
	ObserveWindow string   `json:"observe_window,omitempty"`
	ObserveEvery  string   `json:"observe_every,omitempty"`
	Merge         string   `json:"merge,omitempty"`
	// Draft is auto (a draft where the repository allows one), always or
	// never.
	Draft string `json:"draft,omitempty"`
	// Timeout is "45m" or "plan=10m,implement=90m" (baton.ParseTimeouts).
	Timeout   string `json:"timeout,omitempty"`
	MaxRounds *int   `json:"max_rounds,omitempty"`
	// StallRounds: rounds in a row without progress before a person
	// decides (0: the default, 3).
	StallRounds *int     `json:"stall_rounds,omitempty"`
	AgentArgs   []string `json:"agent_args,omitempty"`
	// PassEnv names secrets agents and commands get anyway (GH_TOKEN, ...).
	PassEnv []string `json:"pass_env,omitempty"`
	// EgressAllow adds hosts the box may reach (netpolicy.ParseRule).
	EgressAllow []string `json:"egress_allow,omitempty"`
	// Setup are shell commands that make a worktree ready; SetupFiles
	// the files whose change runs them again (baton.DefaultSetupFiles
	// when empty). SetupFrom "devcontainer" takes them from the
	// repository's devcontainer.json instead (create reads it).
	Setup      []string `json:"setup,omitempty"`
	SetupFiles []string `json:"setup_files,omitempty"`
	SetupFrom  string   `json:"setup_from,omitempty"`
	// SetupEgressAllow adds hosts only the set-up may reach (a package
	// registry the agents need not).
	SetupEgressAllow []string `json:"setup_egress_allow,omitempty"`
}

// maxSourceConfig bounds the file: settings, not data.
const maxSourceConfig = 64 << 10

// ParseSourceConfig reads a source config: one JSON object, no unknown
// fields (a typo must not silently drop a setting), durations and names
// checked. Errors are Invalid and name the file's problem.
func ParseSourceConfig(b []byte) (SourceConfig, error) {
	var c SourceConfig
	if len(b) > maxSourceConfig {
		return c, baton.Errorf(baton.Invalid, "%s is larger than %d KiB", SourceConfigPath, maxSourceConfig>>10)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return SourceConfig{}, baton.WrapError(baton.Invalid, err, "bad %s", SourceConfigPath)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return SourceConfig{}, baton.Errorf(baton.Invalid, "bad %s: more than one JSON value", SourceConfigPath)
	}
	var probe baton.DeliveryConfig
	if err := c.apply(&probe, nil, nil); err != nil {
		return SourceConfig{}, err
	}
	return c, nil
}

// Apply sets every field c has onto cfg, endpoint and checkpoints.
func (c SourceConfig) Apply(cfg *baton.DeliveryConfig, endpoint *baton.Phase, checkpoints *[]baton.Phase) error {
	return c.apply(cfg, endpoint, checkpoints)
}

func (c SourceConfig) apply(cfg *baton.DeliveryConfig, endpoint *baton.Phase, checkpoints *[]baton.Phase) error {
	bad := func(field string, err error) error {
		return baton.WrapError(baton.Invalid, err, "bad %s in %s", field, SourceConfigPath)
	}
	dur := func(field, s string, dst *time.Duration) error {
		if s == "" {
			return nil
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return bad(field, fmt.Errorf("want a duration such as 10m, got %q", baton.Truncate(s, 40, "…")))
		}
		*dst = d
		return nil
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&cfg.Agent, c.Agent)
	set(&cfg.Model, c.Model)
	set(&cfg.BaseBranch, c.Base)
	set(&cfg.VerifyCommand, c.Verify)
	set(&cfg.DeployCommand, c.Deploy)
	set(&cfg.ObserveCommand, c.Observe)
	for _, d := range []struct {
		field, v string
		dst      *time.Duration
	}{{"observe_window", c.ObserveWindow, &cfg.ObserveWindow}, {"observe_every", c.ObserveEvery, &cfg.ObserveEvery}} {
		if err := dur(d.field, d.v, d.dst); err != nil {
			return err
		}
	}
	if c.Timeout != "" {
		if err := ApplyTimeouts(cfg, c.Timeout); err != nil {
			return bad("timeout", err)
		}
	}
	if c.AgentArgs != nil {
		cfg.AgentArgs = append([]string(nil), c.AgentArgs...)
	}
	if c.PassEnv != nil {
		if err := proc.CheckPassEnv(c.PassEnv); err != nil {
			return bad("pass_env", err)
		}
		cfg.PassEnv = append([]string(nil), c.PassEnv...)
	}
	if c.EgressAllow != nil {
		if _, err := netpolicy.Parse(c.EgressAllow...); err != nil {
			return bad("egress_allow", err)
		}
		cfg.EgressAllow = append([]string(nil), c.EgressAllow...)
	}
	if c.Setup != nil && c.SetupFrom != "" {
		return bad("setup_from", errors.New("name the set-up commands in setup or take them from setup_from, not both"))
	}
	if c.SetupFrom != "" && c.SetupFrom != SetupFromDevcontainer {
		return bad("setup_from", fmt.Errorf("want %q, got %q", SetupFromDevcontainer, baton.Truncate(c.SetupFrom, 40, "…")))
	}
	if c.Setup != nil {
		if err := CheckSetup(c.Setup); err != nil {
			return bad("setup", err)
		}
		cfg.Setup = append([]string(nil), c.Setup...)
	}
	if c.SetupFiles != nil {
		if err := CheckSetupFiles(c.SetupFiles); err != nil {
			return bad("setup_files", err)
		}
		cfg.SetupFiles = append([]string(nil), c.SetupFiles...)
	}
	if c.SetupEgressAllow != nil {
		if _, err := netpolicy.Parse(c.SetupEgressAllow...); err != nil {
			return bad("setup_egress_allow", err)
		}
		cfg.SetupEgressAllow = append([]string(nil), c.SetupEgressAllow...)
	}
	if c.Merge != "" {
		m := baton.MergeMethod(strings.ToLower(c.Merge))
		switch m {
		case baton.MergeSquash, baton.MergeCommit, baton.MergeRebase:
			cfg.MergeMethod = m
		default:
			return bad("merge", fmt.Errorf("want squash, merge or rebase, got %q", baton.Truncate(c.Merge, 40, "…")))
		}
	}
	if c.Draft != "" {
		m, err := baton.ParseDraftMode(c.Draft)
		if err != nil {
			return bad("draft", err)
		}
		cfg.Draft = m
	}
	if c.MaxRounds != nil {
		if *c.MaxRounds < 0 {
			return bad("max_rounds", errors.New("must not be negative"))
		}
		cfg.MaxRounds = *c.MaxRounds
	}
	if c.StallRounds != nil {
		if err := baton.CheckStallRounds(*c.StallRounds); err != nil {
			return bad("stall_rounds", errors.New(baton.ErrorMessage(err)))
		}
		cfg.StallRounds = *c.StallRounds
	}
	if c.Endpoint != "" {
		p, err := baton.ParsePhase(c.Endpoint)
		if err == nil {
			err = baton.CheckEndpoint(p)
		}
		if err != nil {
			return bad("endpoint", err)
		}
		if endpoint != nil {
			*endpoint = p
		}
	}
	if c.Checkpoints != nil {
		cps, err := baton.ParseCheckpoints(strings.Join(c.Checkpoints, ","))
		if err != nil {
			return bad("checkpoints", err)
		}
		if checkpoints != nil {
			*checkpoints = cps
		}
	}
	return nil
}

// ApplyTimeouts parses a timeout setting (baton.ParseTimeouts) onto cfg:
// a bare duration replaces the default, phase durations are added.
func ApplyTimeouts(cfg *baton.DeliveryConfig, s string) error {
	def, per, err := baton.ParseTimeouts(s)
	if err != nil {
		return err
	}
	if def > 0 {
		cfg.PhaseTimeout = def
	}
	for p, d := range per {
		if cfg.PhaseTimeouts == nil {
			cfg.PhaseTimeouts = map[baton.Phase]time.Duration{}
		}
		cfg.PhaseTimeouts[p] = d
	}
	return nil
}
