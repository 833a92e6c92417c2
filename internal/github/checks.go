package github

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	gh "github.com/google/go-github/v92/github"

	"github.com/baton-agent/baton"
)

// CheckState is the summarised state of one check or of all of them.
type CheckState string

// Check states. A ref's state is failure if any check failed, else pending
// if any is still running, else success.
const (
	CheckPending CheckState = "pending"
	CheckSuccess CheckState = "success"
	CheckFailure CheckState = "failure"
)

// CheckKind says which GitHub API reported a check.
type CheckKind string

// Check kinds: GitHub has two CI signals, check runs (GitHub Actions and
// Checks API apps) and commit statuses (older integrations).
const (
	KindCheckRun CheckKind = "check_run"
	KindStatus   CheckKind = "status"
)

// Check is one check run or commit status on a commit.
type Check struct {
	Kind  CheckKind
	Name  string // check run name, or status context
	State CheckState
	// Status and Conclusion are GitHub's raw values for a check run
	// (queued/in_progress/completed; success/failure/neutral/...); for a
	// commit status, Status is its state (pending/success/failure/error).
	Status     string
	Conclusion string
	// URL is where a person looks: the check run's page on GitHub, or the
	// status's target_url.
	URL string
	// DetailsURL is the integrator's page for a check run, if any.
	DetailsURL  string
	Description string // status description, or check run output title
}

// CheckSummary is the CI state of one commit.
type CheckSummary struct {
	Ref    string
	State  CheckState
	Checks []Check // check runs first, then statuses, in GitHub's order
}

// Failing returns the failed checks, with names and URLs for a report.
func (s *CheckSummary) Failing() []Check { return s.with(CheckFailure) }

// Pending returns the checks still running.
func (s *CheckSummary) Pending() []Check { return s.with(CheckPending) }

func (s *CheckSummary) with(st CheckState) []Check {
	var out []Check
	for _, c := range s.Checks {
		if c.State == st {
			out = append(out, c)
		}
	}
	return out
}

// Checks reads the check runs and the commit statuses of ref (a SHA,
// branch or tag) and summarises them. A commit with no checks at all is a
// success with no Checks: GitHub's own combined status says "pending"
// then, which would make a repository without CI wait forever; a caller
// that expects CI should wait until len(Checks) > 0.
//
// Requests: one per 100 check runs plus one per 100 statuses, two for most
// commits.
func (c *Client) Checks(ctx context.Context, repo Repo, ref string) (*CheckSummary, error) {
	if err := repo.validate(); err != nil {
		return nil, err
	}
	if !validRef(ref) {
		return nil, baton.Errorf(baton.Invalid, "read checks of %s: bad ref %q", repo, baton.Truncate(ref, 100, "…"))
	}
	o := op{action: "read checks of", what: fmt.Sprintf("%s@%s", repo, ref)}
	sum := &CheckSummary{Ref: ref}
	base := fmt.Sprintf("repos/%s/%s/commits/%s", repo.Owner, repo.Name, escapeRef(ref))
	err := paginate(ctx, c, base+"/check-runs", nil, o, func(page gh.ListCheckRunsResults) error {
		for _, cr := range page.CheckRuns {
			sum.Checks = append(sum.Checks, Check{
				Kind:        KindCheckRun,
				Name:        cr.GetName(),
				State:       checkRunState(cr.GetStatus(), cr.GetConclusion()),
				Status:      cr.GetStatus(),
				Conclusion:  cr.GetConclusion(),
				URL:         firstNonEmpty(cr.GetHTMLURL(), cr.GetDetailsURL()),
				DetailsURL:  cr.GetDetailsURL(),
				Description: cr.GetOutput().GetTitle(),
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The combined status lists the latest status per context.
	err = paginate(ctx, c, base+"/status", nil, o, func(page gh.CombinedStatus) error {
		for _, st := range page.Statuses {
			sum.Checks = append(sum.Checks, Check{
				Kind:        KindStatus,
				Name:        st.GetContext(),
				State:       statusState(st.GetState()),
				Status:      st.GetState(),
				URL:         st.GetTargetURL(),
				Description: st.GetDescription(),
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sum.State = CheckSuccess
	for _, ch := range sum.Checks {
		switch {
		case ch.State == CheckFailure:
			sum.State = CheckFailure
		case ch.State == CheckPending && sum.State != CheckFailure:
			sum.State = CheckPending
		}
	}
	return sum, nil
}

// checkRunState summarises a check run. Neutral and skipped count as
// success, as GitHub's merge box counts them; every other conclusion of a
// completed run (failure, cancelled, timed_out, action_required, stale,
// startup_failure, or one GitHub adds later) blocks.
func checkRunState(status, conclusion string) CheckState {
	if status != "completed" {
		return CheckPending
	}
	switch conclusion {
	case "success", "neutral", "skipped":
		return CheckSuccess
	}
	return CheckFailure
}

// statusState summarises a commit status: error and failure fail.
func statusState(s string) CheckState {
	switch s {
	case "success":
		return CheckSuccess
	case "pending":
		return CheckPending
	}
	return CheckFailure
}

// validRef accepts what git accepts in a ref name, as far as it matters
// for a URL path: no "..", control characters, spaces, '?', '#' or '\'.
func validRef(ref string) bool {
	if ref == "" || len(ref) > 255 || strings.Contains(ref, "..") || strings.HasPrefix(ref, "/") {
		return false
	}
	for _, c := range ref {
		if c <= ' ' || c == 0x7f || strings.ContainsRune(`?#\~^:*[`, c) {
			return false
		}
	}
	return true
}

// escapeRef escapes each segment of a ref but keeps its slashes, the form
// GitHub routes for branch names such as "feature/x".
func escapeRef(ref string) string {
	parts := strings.Split(ref, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// NewStatus is a commit status to post.
type NewStatus struct {
	State CheckState // pending, success or failure
	// Context names the status among the commit's ("baton/review").
	Context string
	// TargetURL is where the status links; "" for none.
	TargetURL string
	// Description is cut to GitHub's 140 characters.
	Description string
}

// maxStatusDescription is GitHub's limit on a status description.
const maxStatusDescription = 140

// CreateStatus posts a commit status on sha (a full SHA). It works with a
// person's token and an App's (statuses: write). Invalid for a bad state,
// SHA or context. One request.
func (c *Client) CreateStatus(ctx context.Context, repo Repo, sha string, st NewStatus) error {
	if err := repo.validate(); err != nil {
		return err
	}
	o := op{action: "post status " + st.Context + " on", what: fmt.Sprintf("%s@%s", repo, baton.Truncate(sha, 12, ""))}
	switch {
	case !fullSHA(sha):
		return c.fail(baton.Invalid, nil, o, "want a full commit SHA")
	case st.State != CheckPending && st.State != CheckSuccess && st.State != CheckFailure:
		return c.fail(baton.Invalid, nil, o, "bad state %q: want pending, success or failure", st.State)
	case strings.TrimSpace(st.Context) == "":
		return c.fail(baton.Invalid, nil, o, "a status needs a context")
	}
	body := struct {
		State       string `json:"state"`
		TargetURL   string `json:"target_url,omitempty"`
		Description string `json:"description,omitempty"`
		Context     string `json:"context"`
	}{string(st.State), st.TargetURL, baton.Truncate(st.Description, maxStatusDescription-1, "…"), st.Context}
	_, err := c.send(ctx, "POST", fmt.Sprintf("repos/%s/%s/statuses/%s", repo.Owner, repo.Name, sha), body, nil, o)
	return err
}

// NewCheckRun is a check run to create or to change. Conclusion, when
// set, completes it.
type NewCheckRun struct {
	Name    string
	HeadSHA string // on create only
	// Status is queued, in_progress or completed; Conclusion (success,
	// failure, ...) completes it.
	Status     string
	Conclusion string
	DetailsURL string
	// Title and Summary are the run's output; Summary is markdown, cut to
	// GitHub's 65,535 characters.
	Title   string
	Summary string
}

// maxCheckSummary is GitHub's limit on a check run's output summary.
const maxCheckSummary = 65535

func (nc NewCheckRun) body(create bool) map[string]any {
	b := map[string]any{}
	if create || nc.Name != "" {
		b["name"] = nc.Name
	}
	if create {
		b["head_sha"] = nc.HeadSHA
	}
	if nc.Status != "" {
		b["status"] = nc.Status
	}
	if nc.Conclusion != "" {
		b["conclusion"] = nc.Conclusion
	}
	if nc.DetailsURL != "" {
		b["details_url"] = nc.DetailsURL
	}
	if nc.Title != "" || nc.Summary != "" {
		b["output"] = map[string]string{"title": nc.Title, "summary": baton.Truncate(nc.Summary, maxCheckSummary-3, "…")}
	}
	return b
}

// CreateCheckRun creates a check run on its HeadSHA and returns its id.
// Only a GitHub App may (a person's token gets Invalid: GitHub answers
// 403 "You must authenticate via a GitHub App"). One request.
func (c *Client) CreateCheckRun(ctx context.Context, repo Repo, nc NewCheckRun) (int64, error) {
	if err := repo.validate(); err != nil {
		return 0, err
	}
	o := op{action: "create check run " + nc.Name + " on", what: fmt.Sprintf("%s@%s", repo, baton.Truncate(nc.HeadSHA, 12, ""))}
	if !fullSHA(nc.HeadSHA) || strings.TrimSpace(nc.Name) == "" {
		return 0, c.fail(baton.Invalid, nil, o, "a check run needs a name and a full head SHA")
	}
	var cr gh.CheckRun
	if _, err := c.send(ctx, "POST", fmt.Sprintf("repos/%s/%s/check-runs", repo.Owner, repo.Name), nc.body(true), &cr, o); err != nil {
		return 0, err
	}
	return cr.GetID(), nil
}

// UpdateCheckRun changes the check run id: its status, conclusion and
// output. Only the App that created it may. One request.
func (c *Client) UpdateCheckRun(ctx context.Context, repo Repo, id int64, nc NewCheckRun) error {
	if err := repo.validate(); err != nil {
		return err
	}
	o := op{action: "update check run", what: fmt.Sprintf("%d of %s", id, repo)}
	_, err := c.send(ctx, "PATCH", fmt.Sprintf("repos/%s/%s/check-runs/%d", repo.Owner, repo.Name, id), nc.body(false), nil, o)
	return err
}

// fullSHA reports whether s is a 40-hex-digit commit SHA.
func fullSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
