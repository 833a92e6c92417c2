package delivery

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/gitx"
	"github.com/baton-agent/baton/internal/netpolicy"
	"github.com/baton-agent/baton/internal/proc"
	"github.com/baton-agent/baton/internal/safefile"
)

// Request asks for a delivery: what it is for, and the settings that
// differ from the defaults and from the repository's
// .agent/delivery.json. The same repository and request (the issue URL,
// else the summary) always name the same delivery.
type Request struct {
	// IssueURL is the GitHub issue the delivery is for.
	IssueURL string
	// Repo is a local git repository to deliver into (any directory in
	// it). Empty means the issue's repository on GitHub.
	Repo string
	// Summary says what to deliver; its first line is the title. For an
	// issue it defaults to "GitHub Issue #N: <title>".
	Summary string
	// Actor is who asks, for the phase log.
	Actor string
	// Settings override the defaults; nil fields keep them.
	Settings Settings
}

// Settings are a request's overrides. A nil field keeps what the
// defaults and the repository's .agent/delivery.json say; a set field
// wins, even when it is empty.
type Settings struct {
	Agent     *string
	AgentArgs *[]string
	// PassEnv names secrets of baton's environment that agents and
	// commands get anyway (GH_TOKEN, ...).
	PassEnv *[]string
	Model   *string
	Base    *string
	// Verify, Deploy and Observe are shell commands (sh -c).
	Verify        *string
	Deploy        *string
	Observe       *string
	ObserveWindow *time.Duration
	ObserveEvery  *time.Duration
	// Timeout is "45m" or "30m,implement=2h" (baton.ParseTimeouts).
	Timeout   *string
	MaxRounds *int
	// StallRounds: rounds in a row without progress before the delivery
	// is blocked for a person (0: the default, 3).
	StallRounds *int
	Merge       *baton.MergeMethod
	// Draft is whether the work pull request opens as a draft (auto,
	// always, never).
	Draft       *baton.DraftMode
	Endpoint    *baton.Phase
	Checkpoints *[]baton.Phase
	// Setup are the set-up's shell commands, SetupFiles the files whose
	// change runs it again, SetupEgressAllow what the set-up alone may
	// reach.
	Setup            *[]string
	SetupFiles       *[]string
	SetupEgressAllow *[]string
}

// Create stores a new delivery for r, with its plan queued, or returns
// the delivery that already exists for the same repository and request,
// unchanged (created=false). Bad requests are Invalid and say what to
// change.
func (s *Service) Create(ctx context.Context, r Request) (d *baton.Delivery, created bool, err error) {
	nd, err := s.newDelivery(ctx, r)
	if err != nil {
		return nil, false, err
	}
	return s.Insert(ctx, *nd, r.Actor)
}

// newDelivery assembles the delivery r asks for: target, request ref,
// summary, then settings in order of precedence (defaults, the
// repository's file or, for a GitHub delivery, its source's set-up, the
// request).
func (s *Service) newDelivery(ctx context.Context, r Request) (*baton.Delivery, error) {
	if err := r.checkSizes(); err != nil {
		return nil, err
	}
	st := r.Settings
	if r.IssueURL == "" && r.Repo == "" {
		return nil, baton.Errorf(baton.Invalid, "a delivery needs a GitHub issue URL, or a local repository with a summary")
	}
	if r.IssueURL == "" && strings.TrimSpace(r.Summary) == "" {
		return nil, baton.Errorf(baton.Invalid, "a delivery into a local repository needs a summary (or an issue) to say what to deliver")
	}
	if st.ObserveWindow != nil && (st.Observe == nil || *st.Observe == "") {
		return nil, baton.Errorf(baton.Invalid, "an observe window needs an observe command to run")
	}
	d := baton.Delivery{
		Phase: baton.PhaseIntake, RunStatus: baton.StatusPending, // until created
		Endpoint:    baton.DefaultEndpoint,
		Checkpoints: append([]baton.Phase{}, baton.DefaultCheckpoints...),
		Config: baton.DeliveryConfig{
			Agent: baton.DefaultAgent, PhaseTimeout: baton.DefaultPhaseTimeout, MaxRounds: baton.DefaultMaxRounds,
		},
	}
	if s.DefaultAgent != "" {
		d.Config.Agent = s.DefaultAgent
	}
	requestKey := ""
	var issueRepo github.Repo
	var issueNumber int
	if r.IssueURL != "" {
		// Every spelling of the issue's URL is one request: the canonical
		// URL is the key, so they all find the same delivery.
		ref, err := github.ParseIssueURL(r.IssueURL)
		if err != nil {
			return nil, err
		}
		if err := s.GitHubHosts.Check(ref.Repo.Host); err != nil {
			return nil, err
		}
		issueRepo, issueNumber, requestKey = ref.Repo, ref.Number, ref.URL()
		d.Refs = append(d.Refs, baton.Ref{Role: baton.RoleRequest, Type: "github_issue", Label: fmt.Sprintf("%s#%d", ref.Repo, ref.Number), URL: ref.URL()})
	}
	if r.Repo != "" {
		if err := s.targetLocal(ctx, &d, r.Repo); err != nil {
			return nil, err
		}
	} else {
		d.Repository, d.Forge = issueRepo.String(), baton.ForgeGitHub
		if issueRepo.Host != "" && issueRepo.Host != github.DefaultHost {
			d.Repository = issueRepo.Host + "/" + issueRepo.String()
		}
		if err := s.applySourceSetup(ctx, &d); err != nil {
			return nil, err
		}
	}
	summary := strings.TrimSpace(r.Summary)
	if summary == "" {
		title, err := s.issueTitle(ctx, issueRepo, issueNumber)
		if err != nil {
			return nil, baton.WrapError(baton.ErrorCode(err), err, "read %s to name the delivery (or give a summary)", r.IssueURL)
		}
		summary = fmt.Sprintf("GitHub Issue #%d: %s", issueNumber, title)
	}
	d.Summary = summary
	if requestKey == "" {
		requestKey = summary
		d.Refs = append(d.Refs, baton.Ref{Role: baton.RoleRequest, Type: "summary", Label: d.Title()})
	}
	if err := st.apply(&d); err != nil {
		return nil, err
	}
	if _, err := agentrun.Command(agentrun.Spec{Agent: d.Config.Agent, Prompt: "-", ExtraArgs: d.Config.AgentArgs}); err != nil {
		return nil, err
	}
	d.ID = baton.DeliveryID(d.Repository, requestKey)
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// checkSizes applies the caps on a request's free text. Settings are
// left to their own parsers: they come from the command line and the
// repository's file, never from a request of the API.
func (r Request) checkSizes() error {
	for _, f := range []struct {
		what, v string
		max     int
	}{
		{"the summary", r.Summary, baton.MaxSummary},
		{"the issue URL", r.IssueURL, baton.MaxURL},
		{"the repository path", r.Repo, baton.MaxPath},
		{"the actor's name", r.Actor, baton.MaxName},
	} {
		if err := baton.CheckSize(f.what, f.v, f.max); err != nil {
			return err
		}
	}
	return nil
}

// targetLocal points d at the local repository holding dir and applies
// the repository's .agent/delivery.json.
func (s *Service) targetLocal(ctx context.Context, d *baton.Delivery, dir string) error {
	top, err := gitx.Open(dir).TopLevel(ctx)
	if err != nil {
		return baton.Errorf(baton.Invalid, "%s is not a git repository: a local delivery needs one", dir)
	}
	if _, err := gitx.Open(top).Head(ctx); err != nil {
		return baton.Errorf(baton.Invalid, "%s has no commits yet: commit something to branch from", top)
	}
	d.Repository, d.Forge = top, baton.ForgeLocal
	return applySourceConfig(d, top)
}

// applySourceConfig applies the repository's .agent/delivery.json (and
// the dev container it takes its set-up from) to d.
func applySourceConfig(d *baton.Delivery, top string) error {
	b, err := readSourceConfig(top)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	sc, err := ParseSourceConfig(b)
	if err != nil {
		return err
	}
	if err := sc.Apply(&d.Config, &d.Endpoint, &d.Checkpoints); err != nil {
		return err
	}
	if sc.SetupFrom == SetupFromDevcontainer {
		cmds, path, err := DevcontainerSetup(top)
		if err != nil {
			return err
		}
		if path == "" {
			return baton.Errorf(baton.Invalid, "%s takes the set-up from the dev container (setup_from), but the repository has no %s: add one, or name the commands in setup",
				SourceConfigPath, strings.Join(devcontainerPaths, " or "))
		}
		d.Config.Setup = cmds
	}
	return nil
}

// applySourceSetup gives d, a GitHub delivery, the set-up of its
// repository's source, if it has one with a set-up: a GitHub delivery
// reads no settings from its repository, so the operator's set-up is
// the one it runs, whoever made it (a sync, a webhook, a person); the
// request's own set-up is applied over it.
func (s *Service) applySourceSetup(ctx context.Context, d *baton.Delivery) error {
	src, err := s.Store().FindSource(ctx, d.Repository)
	switch {
	case baton.ErrorCode(err) == baton.NotFound:
		return nil
	case err != nil:
		return err
	}
	su := src.Setup
	d.Config.Setup, d.Config.SetupFiles, d.Config.SetupEgressAllow = slices.Clone(su.Commands), slices.Clone(su.Files), slices.Clone(su.EgressAllow)
	return nil
}

// readSourceConfig reads top's .agent/delivery.json: a regular file
// beneath top of at most maxSourceConfig bytes. A link on the way (a
// clone can carry one, to a named pipe or a file of baton's) is refused,
// not followed, and nothing is opened blocking.
func readSourceConfig(top string) ([]byte, error) {
	b, err := safefile.ReadBeneath(top, SourceConfigPath, maxSourceConfig)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return b, err
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, baton.Errorf(baton.Invalid, "%s is larger than %d KiB", SourceConfigPath, maxSourceConfig>>10)
	case errors.Is(err, safefile.ErrNotRegular), errors.Is(err, safefile.ErrNotBeneath):
		return nil, baton.WrapError(baton.Invalid, err, "%s must be a regular file of the repository, not a link, a named pipe or a directory: replace it with the settings themselves", SourceConfigPath)
	}
	return nil, baton.WrapError(baton.Invalid, err, "read %s", SourceConfigPath)
}

// issueTitle reads an issue's title through GitHub.
func (s *Service) issueTitle(ctx context.Context, repo github.Repo, n int) (string, error) {
	if s.GitHub == nil {
		return "", baton.Errorf(baton.Unavailable, "no GitHub access is configured")
	}
	c, err := s.GitHub(ctx, repo)
	if err != nil {
		return "", err
	}
	is, err := c.Issue(ctx, repo, n, github.IssueOptions{})
	if err != nil {
		return "", err
	}
	return is.Title, nil
}

// apply sets the request's overrides on d.
func (st Settings) apply(d *baton.Delivery) error {
	c := &d.Config
	for _, f := range []struct {
		dst *string
		v   *string
	}{
		{&c.Agent, st.Agent}, {&c.Model, st.Model}, {&c.VerifyCommand, st.Verify},
		{&c.DeployCommand, st.Deploy}, {&c.ObserveCommand, st.Observe}, {&c.BaseBranch, st.Base},
	} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if st.ObserveWindow != nil {
		c.ObserveWindow = *st.ObserveWindow
	}
	if st.ObserveEvery != nil {
		c.ObserveEvery = *st.ObserveEvery
	}
	if st.Timeout != nil {
		if err := ApplyTimeouts(c, *st.Timeout); err != nil {
			return err
		}
	}
	if st.AgentArgs != nil {
		c.AgentArgs = append([]string(nil), (*st.AgentArgs)...)
	}
	if st.PassEnv != nil {
		if err := proc.CheckPassEnv(*st.PassEnv); err != nil {
			return baton.WrapError(baton.Invalid, err, "bad --pass-env")
		}
		c.PassEnv = append([]string(nil), (*st.PassEnv)...)
	}
	if st.MaxRounds != nil {
		c.MaxRounds = *st.MaxRounds
	}
	if st.Setup != nil {
		if err := CheckSetup(*st.Setup); err != nil {
			return baton.WrapError(baton.Invalid, err, "bad --setup")
		}
		c.Setup = append([]string(nil), (*st.Setup)...)
	}
	if st.SetupFiles != nil {
		if err := CheckSetupFiles(*st.SetupFiles); err != nil {
			return baton.WrapError(baton.Invalid, err, "bad set-up file")
		}
		c.SetupFiles = append([]string(nil), (*st.SetupFiles)...)
	}
	if st.SetupEgressAllow != nil {
		if _, err := netpolicy.Parse(*st.SetupEgressAllow...); err != nil {
			return baton.WrapError(baton.Invalid, err, "bad --setup-egress-allow")
		}
		c.SetupEgressAllow = append([]string(nil), (*st.SetupEgressAllow)...)
	}
	if st.StallRounds != nil {
		if err := baton.CheckStallRounds(*st.StallRounds); err != nil {
			return baton.WrapError(baton.Invalid, err, "bad --stall-rounds")
		}
		c.StallRounds = *st.StallRounds
	}
	if st.Merge != nil {
		c.MergeMethod = baton.MergeMethod(strings.ToLower(string(*st.Merge)))
	}
	if st.Draft != nil {
		m, err := baton.ParseDraftMode(string(*st.Draft))
		if err != nil {
			return err
		}
		c.Draft = m
	}
	if st.Endpoint != nil {
		d.Endpoint = *st.Endpoint
	}
	if st.Checkpoints != nil {
		d.Checkpoints = append([]baton.Phase{}, (*st.Checkpoints)...)
	}
	return nil
}
