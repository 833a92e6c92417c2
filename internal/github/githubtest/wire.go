package githubtest

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// The types below are GitHub's REST response shapes, with the field names
// and nesting of the real API (a representative subset of fields; every
// field baton reads is present, and nulls are nulls).

type userJSON struct {
	Login     string `json:"login"`
	ID        int64  `json:"id"`
	NodeID    string `json:"node_id"`
	AvatarURL string `json:"avatar_url"`
	URL       string `json:"url"`
	HTMLURL   string `json:"html_url"`
	Type      string `json:"type"`
	SiteAdmin bool   `json:"site_admin"`
}

// viewerJSON is GET /user: the public user plus profile fields.
type viewerJSON struct {
	userJSON
	Name        *string `json:"name"`
	Company     *string `json:"company"`
	Blog        string  `json:"blog"`
	Location    *string `json:"location"`
	Email       *string `json:"email"`
	Bio         *string `json:"bio"`
	PublicRepos int     `json:"public_repos"`
	Followers   int     `json:"followers"`
	Following   int     `json:"following"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`
}

type repoJSON struct {
	ID            int64    `json:"id"`
	NodeID        string   `json:"node_id"`
	Name          string   `json:"name"`
	FullName      string   `json:"full_name"`
	Private       bool     `json:"private"`
	Owner         userJSON `json:"owner"`
	HTMLURL       string   `json:"html_url"`
	Description   *string  `json:"description"`
	Fork          bool     `json:"fork"`
	URL           string   `json:"url"`
	DefaultBranch string   `json:"default_branch"`
}

type branchJSON struct {
	Label string    `json:"label"`
	Ref   string    `json:"ref"`
	SHA   string    `json:"sha"`
	User  userJSON  `json:"user"`
	Repo  *repoJSON `json:"repo"`
}

type labelJSON struct {
	ID          int64   `json:"id"`
	NodeID      string  `json:"node_id"`
	URL         string  `json:"url"`
	Name        string  `json:"name"`
	Color       string  `json:"color"`
	Default     bool    `json:"default"`
	Description *string `json:"description"`
}

type hrefJSON struct {
	Href string `json:"href"`
}

type pullJSON struct {
	URL                 string              `json:"url"`
	ID                  int64               `json:"id"`
	NodeID              string              `json:"node_id"`
	HTMLURL             string              `json:"html_url"`
	DiffURL             string              `json:"diff_url"`
	PatchURL            string              `json:"patch_url"`
	IssueURL            string              `json:"issue_url"`
	CommitsURL          string              `json:"commits_url"`
	ReviewCommentsURL   string              `json:"review_comments_url"`
	CommentsURL         string              `json:"comments_url"`
	StatusesURL         string              `json:"statuses_url"`
	Number              int                 `json:"number"`
	State               string              `json:"state"`
	Locked              bool                `json:"locked"`
	Title               string              `json:"title"`
	User                userJSON            `json:"user"`
	Body                *string             `json:"body"`
	Labels              []labelJSON         `json:"labels"`
	Milestone           any                 `json:"milestone"`
	ActiveLockReason    *string             `json:"active_lock_reason"`
	CreatedAt           string              `json:"created_at"`
	UpdatedAt           string              `json:"updated_at"`
	ClosedAt            *string             `json:"closed_at"`
	MergedAt            *string             `json:"merged_at"`
	MergeCommitSHA      *string             `json:"merge_commit_sha"`
	Assignee            *userJSON           `json:"assignee"`
	Assignees           []userJSON          `json:"assignees"`
	RequestedReviewers  []userJSON          `json:"requested_reviewers"`
	RequestedTeams      []any               `json:"requested_teams"`
	Head                branchJSON          `json:"head"`
	Base                branchJSON          `json:"base"`
	Links               map[string]hrefJSON `json:"_links"`
	AuthorAssociation   string              `json:"author_association"`
	AutoMerge           any                 `json:"auto_merge"`
	Draft               bool                `json:"draft"`
	Merged              bool                `json:"merged"`
	Mergeable           *bool               `json:"mergeable"`
	Rebaseable          *bool               `json:"rebaseable"`
	MergeableState      string              `json:"mergeable_state"`
	MergedBy            *userJSON           `json:"merged_by"`
	Comments            int                 `json:"comments"`
	ReviewComments      int                 `json:"review_comments"`
	MaintainerCanModify bool                `json:"maintainer_can_modify"`
	Commits             int                 `json:"commits"`
	Additions           int                 `json:"additions"`
	Deletions           int                 `json:"deletions"`
	ChangedFiles        int                 `json:"changed_files"`
}

type fileJSON struct {
	SHA              string  `json:"sha"`
	Filename         string  `json:"filename"`
	Status           string  `json:"status"`
	Additions        int     `json:"additions"`
	Deletions        int     `json:"deletions"`
	Changes          int     `json:"changes"`
	BlobURL          string  `json:"blob_url"`
	RawURL           string  `json:"raw_url"`
	ContentsURL      string  `json:"contents_url"`
	Patch            *string `json:"patch,omitempty"`
	PreviousFilename *string `json:"previous_filename,omitempty"`
}

type issuePullJSON struct {
	URL      string  `json:"url"`
	HTMLURL  string  `json:"html_url"`
	DiffURL  string  `json:"diff_url"`
	PatchURL string  `json:"patch_url"`
	MergedAt *string `json:"merged_at"`
}

type issueJSON struct {
	URL               string         `json:"url"`
	RepositoryURL     string         `json:"repository_url"`
	LabelsURL         string         `json:"labels_url"`
	CommentsURL       string         `json:"comments_url"`
	EventsURL         string         `json:"events_url"`
	HTMLURL           string         `json:"html_url"`
	ID                int64          `json:"id"`
	NodeID            string         `json:"node_id"`
	Number            int            `json:"number"`
	Title             string         `json:"title"`
	User              userJSON       `json:"user"`
	Labels            []labelJSON    `json:"labels"`
	State             string         `json:"state"`
	Locked            bool           `json:"locked"`
	Assignee          *userJSON      `json:"assignee"`
	Assignees         []userJSON     `json:"assignees"`
	Milestone         any            `json:"milestone"`
	Comments          int            `json:"comments"`
	CreatedAt         string         `json:"created_at"`
	UpdatedAt         string         `json:"updated_at"`
	ClosedAt          *string        `json:"closed_at"`
	AuthorAssociation string         `json:"author_association"`
	ActiveLockReason  *string        `json:"active_lock_reason"`
	Draft             *bool          `json:"draft,omitempty"`
	PullRequest       *issuePullJSON `json:"pull_request,omitempty"`
	Body              *string        `json:"body"`
	StateReason       *string        `json:"state_reason"`
}

type commentJSON struct {
	URL               string   `json:"url"`
	HTMLURL           string   `json:"html_url"`
	IssueURL          string   `json:"issue_url"`
	ID                int64    `json:"id"`
	NodeID            string   `json:"node_id"`
	User              userJSON `json:"user"`
	CreatedAt         string   `json:"created_at"`
	UpdatedAt         string   `json:"updated_at"`
	AuthorAssociation string   `json:"author_association"`
	Body              string   `json:"body"`
}

type reviewCommentJSON struct {
	URL                 string              `json:"url"`
	PullRequestReviewID int64               `json:"pull_request_review_id"`
	ID                  int64               `json:"id"`
	NodeID              string              `json:"node_id"`
	DiffHunk            string              `json:"diff_hunk"`
	Path                string              `json:"path"`
	CommitID            string              `json:"commit_id"`
	OriginalCommitID    string              `json:"original_commit_id"`
	InReplyToID         *int64              `json:"in_reply_to_id,omitempty"`
	User                userJSON            `json:"user"`
	Body                string              `json:"body"`
	CreatedAt           string              `json:"created_at"`
	UpdatedAt           string              `json:"updated_at"`
	HTMLURL             string              `json:"html_url"`
	PullRequestURL      string              `json:"pull_request_url"`
	AuthorAssociation   string              `json:"author_association"`
	Links               map[string]hrefJSON `json:"_links"`
	StartLine           *int                `json:"start_line"`
	OriginalStartLine   *int                `json:"original_start_line"`
	StartSide           *string             `json:"start_side"`
	Line                *int                `json:"line"`
	OriginalLine        int                 `json:"original_line"`
	Side                string              `json:"side"`
	SubjectType         string              `json:"subject_type"`
}

type reviewJSON struct {
	ID                int64               `json:"id"`
	NodeID            string              `json:"node_id"`
	User              userJSON            `json:"user"`
	Body              string              `json:"body"`
	State             string              `json:"state"`
	HTMLURL           string              `json:"html_url"`
	PullRequestURL    string              `json:"pull_request_url"`
	Links             map[string]hrefJSON `json:"_links"`
	SubmittedAt       *string             `json:"submitted_at,omitempty"`
	CommitID          string              `json:"commit_id"`
	AuthorAssociation string              `json:"author_association"`
}

type checkOutputJSON struct {
	Title            *string `json:"title"`
	Summary          *string `json:"summary"`
	Text             *string `json:"text"`
	AnnotationsCount int     `json:"annotations_count"`
	AnnotationsURL   string  `json:"annotations_url"`
}

type appJSON struct {
	ID    int64    `json:"id"`
	Slug  string   `json:"slug"`
	Name  string   `json:"name"`
	Owner userJSON `json:"owner"`
}

type checkRunJSON struct {
	ID           int64           `json:"id"`
	HeadSHA      string          `json:"head_sha"`
	NodeID       string          `json:"node_id"`
	ExternalID   string          `json:"external_id"`
	URL          string          `json:"url"`
	HTMLURL      string          `json:"html_url"`
	DetailsURL   *string         `json:"details_url"`
	Status       string          `json:"status"`
	Conclusion   *string         `json:"conclusion"`
	StartedAt    *string         `json:"started_at"`
	CompletedAt  *string         `json:"completed_at"`
	Output       checkOutputJSON `json:"output"`
	Name         string          `json:"name"`
	CheckSuite   map[string]any  `json:"check_suite"`
	App          appJSON         `json:"app"`
	PullRequests []any           `json:"pull_requests"`
}

type checkRunsJSON struct {
	TotalCount int            `json:"total_count"`
	CheckRuns  []checkRunJSON `json:"check_runs"`
}

type statusJSON struct {
	URL         string   `json:"url"`
	AvatarURL   string   `json:"avatar_url"`
	ID          int64    `json:"id"`
	NodeID      string   `json:"node_id"`
	State       string   `json:"state"`
	Description *string  `json:"description"`
	TargetURL   *string  `json:"target_url"`
	Context     string   `json:"context"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
	Creator     userJSON `json:"creator"`
}

type combinedStatusJSON struct {
	State      string       `json:"state"`
	Statuses   []statusJSON `json:"statuses"`
	SHA        string       `json:"sha"`
	TotalCount int          `json:"total_count"`
	Repository repoJSON     `json:"repository"`
	CommitURL  string       `json:"commit_url"`
	URL        string       `json:"url"`
}

type mergeJSON struct {
	SHA     string `json:"sha"`
	Merged  bool   `json:"merged"`
	Message string `json:"message"`
}

// urls builds API and web URLs for one request: API links point back at
// this server, web links at github.com (or this server in Enterprise
// mode, as a GHE host serves both).
type urls struct {
	api string // "http://127.0.0.1:1234" or ".../api/v3"
	web string
}

func (u urls) repoAPI(r *repo) string { return u.api + "/repos/" + r.fullName() }
func (u urls) repoWeb(r *repo) string { return u.web + "/" + r.fullName() }

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func tsPtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := ts(t)
	return &s
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// userID gives each login a stable id. Call with s.mu held.
func (s *Server) userID(login string) int64 {
	if id, ok := s.users[login]; ok {
		return id
	}
	h := fnv.New32a()
	h.Write([]byte(login))
	id := int64(h.Sum32()%9_000_000) + 1_000_000
	s.users[login] = id
	return id
}

func (s *Server) user(u urls, login string) userJSON {
	kind := "User"
	if strings.HasSuffix(login, "[bot]") {
		kind = "Bot"
	}
	return userJSON{
		Login:     login,
		ID:        s.userID(login),
		NodeID:    nodeID("U", login),
		AvatarURL: fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", s.userID(login)),
		URL:       u.api + "/users/" + login,
		HTMLURL:   u.web + "/" + login,
		Type:      kind,
	}
}

func (s *Server) repoJSON(u urls, r *repo) repoJSON {
	return repoJSON{
		ID: r.id, NodeID: nodeID("R", strings.ToLower(r.fullName())), Name: r.name, FullName: r.fullName(),
		Owner: s.user(u, r.owner), HTMLURL: u.repoWeb(r), URL: u.repoAPI(r), DefaultBranch: DefaultBranch,
	}
}

func (s *Server) labels(u urls, r *repo, names []string) []labelJSON {
	out := []labelJSON{}
	for _, n := range names {
		h := fnv.New32a()
		h.Write([]byte(strings.ToLower(n)))
		out = append(out, labelJSON{
			ID: int64(h.Sum32()), NodeID: nodeID("LA", n), URL: u.repoAPI(r) + "/labels/" + n,
			Name: n, Color: fmt.Sprintf("%06x", h.Sum32()&0xffffff),
		})
	}
	return out
}

// mergeable maps the fixture's MergeableState to mergeable and
// mergeable_state.
func mergeable(p *PullRequest) (*bool, string) {
	t, f := true, false
	if p.Merged || p.State == "closed" {
		return nil, "unknown"
	}
	if p.Draft {
		return &t, "draft"
	}
	switch p.MergeableState {
	case "", "clean":
		return &t, "clean"
	case "dirty":
		return &f, "dirty"
	case "unknown":
		return nil, "unknown"
	}
	return &t, p.MergeableState
}

// pullJSON renders a pull request. Call with s.mu held.
func (s *Server) pullJSON(u urls, r *repo, p *PullRequest) pullJSON {
	api := fmt.Sprintf("%s/pulls/%d", u.repoAPI(r), p.Number)
	web := fmt.Sprintf("%s/pull/%d", u.repoWeb(r), p.Number)
	issueAPI := fmt.Sprintf("%s/issues/%d", u.repoAPI(r), p.Number)
	rj := s.repoJSON(u, r)
	adds, dels := 0, 0
	for _, f := range p.Files {
		adds += f.Additions
		dels += f.Deletions
	}
	m, mstate := mergeable(p)
	out := pullJSON{
		URL: api, ID: p.ID, NodeID: p.NodeID, HTMLURL: web, DiffURL: web + ".diff", PatchURL: web + ".patch",
		IssueURL: issueAPI, CommitsURL: api + "/commits", ReviewCommentsURL: api + "/comments",
		CommentsURL: issueAPI + "/comments", StatusesURL: u.repoAPI(r) + "/statuses/" + p.HeadSHA,
		Number: p.Number, State: p.State, Title: p.Title, User: s.user(u, p.Author), Body: strPtr(p.Body),
		Labels: s.labels(u, r, p.Labels), CreatedAt: ts(p.CreatedAt), UpdatedAt: ts(p.UpdatedAt),
		ClosedAt: tsPtr(p.ClosedAt), MergedAt: tsPtr(p.MergedAt), MergeCommitSHA: strPtr(p.MergeCommitSHA),
		Assignees: []userJSON{}, RequestedReviewers: []userJSON{}, RequestedTeams: []any{},
		Head: branchJSON{Label: r.owner + ":" + p.Head, Ref: p.Head, SHA: p.HeadSHA, User: s.user(u, r.owner), Repo: &rj},
		Base: branchJSON{Label: r.owner + ":" + p.Base, Ref: p.Base, SHA: p.BaseSHA, User: s.user(u, r.owner), Repo: &rj},
		Links: map[string]hrefJSON{
			"self": {api}, "html": {web}, "issue": {issueAPI}, "comments": {issueAPI + "/comments"},
			"review_comments": {api + "/comments"}, "commits": {api + "/commits"},
			"statuses": {u.repoAPI(r) + "/statuses/" + p.HeadSHA},
		},
		AuthorAssociation: "CONTRIBUTOR", Draft: p.Draft, Merged: p.Merged, Mergeable: m, Rebaseable: m,
		MergeableState: mstate, Comments: len(r.comments[p.Number]), ReviewComments: len(r.reviewComms[p.Number]),
		Commits: p.Commits, Additions: adds, Deletions: dels, ChangedFiles: len(p.Files),
	}
	if p.Merged {
		by := p.MergedBy
		if by == "" {
			by = s.viewer
		}
		mb := s.user(u, by)
		out.MergedBy = &mb
	}
	return out
}

func fileJSONOf(u urls, r *repo, headSHA string, f File) fileJSON {
	blob := fmt.Sprintf("%s/blob/%s/%s", u.repoWeb(r), headSHA, f.Filename)
	out := fileJSON{
		SHA: f.SHA, Filename: f.Filename, Status: f.Status, Additions: f.Additions, Deletions: f.Deletions,
		Changes: f.Additions + f.Deletions, BlobURL: blob,
		RawURL:      fmt.Sprintf("%s/raw/%s/%s", u.repoWeb(r), headSHA, f.Filename),
		ContentsURL: fmt.Sprintf("%s/contents/%s?ref=%s", u.repoAPI(r), f.Filename, headSHA),
		Patch:       strPtr(f.Patch), PreviousFilename: strPtr(f.PreviousFilename),
	}
	return out
}

// issueJSONOf renders an issue, or a pull request through the issue API.
// Call with s.mu held.
func (s *Server) issueJSON(u urls, r *repo, number int) issueJSON {
	api := fmt.Sprintf("%s/issues/%d", u.repoAPI(r), number)
	out := issueJSON{
		URL: api, RepositoryURL: u.repoAPI(r), LabelsURL: api + "/labels{/name}", CommentsURL: api + "/comments",
		EventsURL: api + "/events", Number: number, Assignees: []userJSON{},
		Comments: len(r.comments[number]), AuthorAssociation: "CONTRIBUTOR",
	}
	if is, ok := r.issues[number]; ok {
		out.HTMLURL = fmt.Sprintf("%s/issues/%d", u.repoWeb(r), number)
		out.ID, out.NodeID, out.Title, out.Body = is.ID, is.NodeID, is.Title, strPtr(is.Body)
		out.User, out.Labels, out.State = s.user(u, is.Author), s.labels(u, r, is.Labels), is.State
		out.CreatedAt, out.UpdatedAt, out.ClosedAt = ts(is.CreatedAt), ts(is.UpdatedAt), tsPtr(is.ClosedAt)
		out.StateReason = strPtr(is.StateReason)
		return out
	}
	p := r.pulls[number]
	web := fmt.Sprintf("%s/pull/%d", u.repoWeb(r), number)
	out.HTMLURL = web
	out.ID, out.NodeID, out.Title, out.Body = p.ID, p.NodeID, p.Title, strPtr(p.Body)
	out.User, out.Labels, out.State = s.user(u, p.Author), s.labels(u, r, p.Labels), p.State
	out.CreatedAt, out.UpdatedAt, out.ClosedAt = ts(p.CreatedAt), ts(p.UpdatedAt), tsPtr(p.ClosedAt)
	draft := p.Draft
	out.Draft = &draft
	out.PullRequest = &issuePullJSON{
		URL: fmt.Sprintf("%s/pulls/%d", u.repoAPI(r), number), HTMLURL: web,
		DiffURL: web + ".diff", PatchURL: web + ".patch", MergedAt: tsPtr(p.MergedAt),
	}
	return out
}

func (s *Server) commentJSON(u urls, r *repo, number int, c *Comment) commentJSON {
	web := fmt.Sprintf("%s/issues/%d#issuecomment-%d", u.repoWeb(r), number, c.ID)
	if _, isPR := r.pulls[number]; isPR {
		web = fmt.Sprintf("%s/pull/%d#issuecomment-%d", u.repoWeb(r), number, c.ID)
	}
	return commentJSON{
		URL: fmt.Sprintf("%s/issues/comments/%d", u.repoAPI(r), c.ID), HTMLURL: web,
		IssueURL: fmt.Sprintf("%s/issues/%d", u.repoAPI(r), number), ID: c.ID, NodeID: nodeID("IC", itoa(int(c.ID))),
		User: s.user(u, c.Author), CreatedAt: ts(c.CreatedAt), UpdatedAt: ts(c.UpdatedAt),
		AuthorAssociation: "CONTRIBUTOR", Body: c.Body,
	}
}

func (s *Server) reviewCommentJSON(u urls, r *repo, number int, rc *ReviewComment) reviewCommentJSON {
	api := fmt.Sprintf("%s/pulls/comments/%d", u.repoAPI(r), rc.ID)
	web := fmt.Sprintf("%s/pull/%d#discussion_r%d", u.repoWeb(r), number, rc.ID)
	prAPI := fmt.Sprintf("%s/pulls/%d", u.repoAPI(r), number)
	out := reviewCommentJSON{
		URL: api, PullRequestReviewID: rc.ReviewID, ID: rc.ID, NodeID: nodeID("PRRC", itoa(int(rc.ID))),
		DiffHunk: rc.DiffHunk, Path: rc.Path, CommitID: rc.CommitID, OriginalCommitID: rc.CommitID,
		User: s.user(u, rc.Author), Body: rc.Body, CreatedAt: ts(rc.CreatedAt), UpdatedAt: ts(rc.CreatedAt),
		HTMLURL: web, PullRequestURL: prAPI, AuthorAssociation: "CONTRIBUTOR",
		Links:        map[string]hrefJSON{"self": {api}, "html": {web}, "pull_request": {prAPI}},
		OriginalLine: rc.Line, Side: rc.Side, SubjectType: "line",
	}
	if rc.InReplyTo != 0 {
		id := rc.InReplyTo
		out.InReplyToID = &id
	}
	if rc.Line != 0 {
		l := rc.Line
		out.Line = &l
	}
	if rc.StartLine != 0 {
		sl, side := rc.StartLine, rc.Side
		out.StartLine, out.OriginalStartLine, out.StartSide = &sl, &sl, &side
	}
	return out
}

func (s *Server) reviewJSON(u urls, r *repo, number int, rv *Review) reviewJSON {
	web := fmt.Sprintf("%s/pull/%d#pullrequestreview-%d", u.repoWeb(r), number, rv.ID)
	prAPI := fmt.Sprintf("%s/pulls/%d", u.repoAPI(r), number)
	out := reviewJSON{
		ID: rv.ID, NodeID: nodeID("PRR", itoa(int(rv.ID))), User: s.user(u, rv.Author), Body: rv.Body,
		State: rv.State, HTMLURL: web, PullRequestURL: prAPI,
		Links:    map[string]hrefJSON{"html": {web}, "pull_request": {prAPI}},
		CommitID: rv.CommitID, AuthorAssociation: "CONTRIBUTOR",
	}
	out.SubmittedAt = tsPtr(rv.SubmittedAt)
	return out
}

func (s *Server) checkRunJSON(u urls, r *repo, cr *CheckRun) checkRunJSON {
	out := checkRunJSON{
		ID: cr.ID, HeadSHA: cr.HeadSHA, NodeID: nodeID("CR", itoa(int(cr.ID))), ExternalID: "",
		URL:     fmt.Sprintf("%s/check-runs/%d", u.repoAPI(r), cr.ID),
		HTMLURL: fmt.Sprintf("%s/runs/%d", u.repoWeb(r), cr.ID), DetailsURL: strPtr(cr.DetailsURL),
		Status: cr.Status, StartedAt: tsPtr(cr.StartedAt), Name: cr.Name,
		Output: checkOutputJSON{
			Title: strPtr(cr.Title), Summary: strPtr(cr.Summary),
			AnnotationsURL: fmt.Sprintf("%s/check-runs/%d/annotations", u.repoAPI(r), cr.ID),
		},
		CheckSuite:   map[string]any{"id": cr.ID + 500000},
		App:          appJSON{ID: 15368, Slug: "github-actions", Name: "GitHub Actions", Owner: s.user(u, "github")},
		PullRequests: []any{},
	}
	if cr.App != "" {
		out.App = appJSON{ID: s.userID(cr.App), Slug: cr.App, Name: cr.App, Owner: s.user(u, r.owner)}
	}
	if cr.Status == "completed" {
		out.Conclusion = strPtr(cr.Conclusion)
		out.CompletedAt = tsPtr(cr.CompletedAt)
	}
	return out
}

func (s *Server) statusJSON(u urls, r *repo, st *Status) statusJSON {
	return statusJSON{
		URL:       fmt.Sprintf("%s/statuses/%s", u.repoAPI(r), st.SHA),
		AvatarURL: "https://avatars.githubusercontent.com/oa/4808?v=4", ID: st.ID, NodeID: nodeID("SC", itoa(int(st.ID))),
		State: st.State, Description: strPtr(st.Description), TargetURL: strPtr(st.TargetURL), Context: st.Context,
		CreatedAt: ts(st.CreatedAt), UpdatedAt: ts(st.CreatedAt), Creator: s.user(u, cmpOr(st.Creator, DefaultAuthor)),
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
