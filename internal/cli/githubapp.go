package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/intake"
)

// appOptions are the flags that make a long-running command (serve,
// worker) act on GitHub as a GitHub App rather than with a token.
type appOptions struct {
	id      string
	keyFile string
}

func (o *appOptions) register(fl *pflag.FlagSet) {
	fl.StringVar(&o.id, "github-app-id", "", "act on GitHub as this GitHub App (its numeric id) instead of with a token (default $"+github.AppIDVar+")")
	fl.StringVar(&o.keyFile, "github-app-key-file", "", "the GitHub App's private key (.pem) (default $"+github.AppKeyVar+"_FILE, else the credential github-app-key)")
}

// apply hands the App's id and key file to the environment baton reads
// its GitHub access from. A bad id is a usage error.
func (o *appOptions) apply(f *Factory) (map[string]string, error) {
	if o.id != "" {
		if n, err := strconv.ParseInt(strings.TrimSpace(o.id), 10, 64); err != nil || n <= 0 {
			return nil, usageError("--github-app-id %q: want the App's numeric id, from its settings page", o.id)
		}
		if f.Secrets == nil {
			return nil, usageError("--github-app-id needs baton's environment (this build has none)")
		}
		f.Secrets.SetValue(github.AppIDVar, strings.TrimSpace(o.id))
	}
	return map[string]string{github.AppKeyVar: o.keyFile}, nil
}

// githubReport is what doctor found of baton's GitHub identity: the one
// configured, and for each source whom its requests act as and what
// they may do.
type githubReport struct {
	// Identity is the configured identity in a line: a GitHub App, or a
	// token and where it comes from.
	Identity string         `json:"identity"`
	Sources  []sourceReport `json:"sources"`
}

type sourceReport struct {
	Repo     string           `json:"repo"`
	Identity *github.Identity `json:"identity,omitempty"`
	Problem  string           `json:"problem,omitempty"`
	// Setup is the set-up the source's deliveries run: the source's own
	// (a GitHub delivery reads none from its repository).
	Setup baton.SourceSetup `json:"setup,omitzero"`
}

// checkGitHub reports the configured identity and, with probe and a
// delivery database, each source's (one or two requests per source).
func checkGitHub(ctx context.Context, f *Factory, probe bool) (githubReport, []string) {
	rep := githubReport{Sources: []sourceReport{}}
	var warns []string
	switch id := strings.TrimSpace(f.env(github.AppIDVar)); {
	case id != "":
		host := f.env(github.AppHostVar)
		if host == "" {
			host = github.DefaultHost
		}
		rep.Identity = fmt.Sprintf("GitHub App %s on %s (installation tokens minted per repository)", id, host)
	default:
		if _, src := github.TokenFromEnv(f.env); src != "" {
			rep.Identity = "a token from " + src
		} else {
			rep.Identity = "a token from `gh auth token`, if gh has one"
		}
	}
	if !probe || f.DeliveriesConfigured == nil || !f.DeliveriesConfigured("") || f.GitHub == nil {
		return rep, warns
	}
	var srcs []*baton.Source
	err := withIntake(ctx, f, "", func(in *intake.Service) error {
		var err error
		srcs, err = in.List(ctx)
		return err
	})
	if err != nil {
		return rep, append(warns, "cannot read the sources: "+err.Error())
	}
	for _, src := range srcs {
		sr := sourceReport{Repo: src.Repo, Setup: src.Setup}
		repo, err := github.ParseRepo(src.Repo)
		if err == nil {
			var c *github.Client
			if c, err = f.GitHub(ctx, repo, src.APIURL); err == nil {
				var id github.Identity
				if id, err = c.Identity(ctx); err == nil {
					if id.Kind == "token" && id.Source == "" {
						id.Source = rep.Identity
					}
					sr.Identity = &id
				}
			}
		}
		if err != nil {
			sr.Problem = err.Error()
			warns = append(warns, fmt.Sprintf("source %s cannot reach GitHub: %s", src.Repo, err))
		}
		rep.Sources = append(rep.Sources, sr)
	}
	return rep, warns
}

// writeGitHub renders the GitHub section of doctor's text report.
func writeGitHub(w interface{ Write([]byte) (int, error) }, rep githubReport) {
	fmt.Fprintf(w, "github: %s\n", rep.Identity)
	for _, s := range rep.Sources {
		switch {
		case s.Identity == nil:
			fmt.Fprintf(w, "  source %s: %s\n", s.Repo, s.Problem)
		default:
			id := s.Identity
			who := id.Source
			if id.Account != "" {
				who += " as " + id.Account
			}
			may := "GitHub does not list a fine-grained token's permissions"
			if len(id.May) > 0 {
				may = strings.Join(id.May, ", ")
			}
			fmt.Fprintf(w, "  source %s: %s; may: %s\n", s.Repo, who, may)
		}
		if s.Setup.IsZero() {
			fmt.Fprintf(w, "    its deliveries' set-up: none (`baton source set %s --setup CMD` names one)\n", s.Repo)
		} else {
			fmt.Fprintf(w, "    its deliveries' set-up, the source's (baton source set): `%s`\n", strings.Join(s.Setup.Commands, "`; `"))
		}
	}
}
