package githubtest

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PullRequest is a pull request in the model. Zero fields get defaults
// when added: the next free number, author DefaultAuthor, state "open",
// base DefaultBranch, head "feature-N", generated SHAs, title "Change N".
type PullRequest struct {
	Number int
	Title  string
	Body   string
	Author string
	State  string // "open" or "closed"
	Draft  bool
	Labels []string

	Head    string // branch name
	HeadSHA string
	Base    string
	BaseSHA string

	// Files are the changed files, served by /pulls/N/files (at most 3,000,
	// as GitHub) and used for the totals and, when Diff is nil, the diff.
	Files []File
	// Diff produces the diff served for the diff media type. Nil renders
	// Files (FileDiff).
	Diff Diff
	// Commits is the commit count reported (default 1).
	Commits int
	// ClosingIssues are numbers of issues in the same repository that this
	// pull request closes (closingIssuesReferences, and the issue side's
	// closedByPullRequestsReferences). Merging into the default branch
	// closes them.
	ClosingIssues []int

	// MergeableState drives mergeable, mergeable_state and merging:
	// "clean" (default), "unstable" and "unknown" merge; "dirty" is
	// mergeable=false and answers 405 "not mergeable"; "blocked" answers
	// 405 for a missing approval. A draft always reports "draft".
	MergeableState string

	// Set by a merge through the API (or by a test).
	Merged         bool
	MergedBy       string
	MergeMethod    string // squash, merge or rebase
	MergeCommitSHA string

	CreatedAt time.Time
	UpdatedAt time.Time
	MergedAt  time.Time
	ClosedAt  time.Time

	// Assigned by the server.
	ID     int64
	NodeID string
}

// File is a changed file of a pull request.
type File struct {
	Filename         string
	PreviousFilename string // for renamed
	Status           string // added, removed, modified (default), renamed, copied, changed, unchanged
	Additions        int
	Deletions        int
	// Patch is the unified-diff hunks ("@@ -1,2 +1,3 @@\n..."); empty
	// omits the field, as GitHub does for binary or huge files.
	Patch string
	SHA   string // blob SHA; generated when empty
}

// Issue is an issue in the model. Defaults: next free number, author
// DefaultAuthor, state "open", title "Issue N".
type Issue struct {
	Number      int
	Title       string
	Body        string
	Author      string
	State       string // "open" or "closed"
	StateReason string // completed, not_planned, reopened, or ""
	Labels      []string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ClosedAt    time.Time

	ID     int64
	NodeID string
}

// Comment is a conversation comment on an issue or pull request.
type Comment struct {
	ID        int64
	Author    string // default DefaultAuthor; the viewer when posted through the API
	Body      string
	CreatedAt time.Time
	UpdatedAt time.Time
	// Reactions are what people and Apps reacted with, oldest first.
	Reactions []Reaction
}

// ReviewComment is an inline comment on a pull request's diff.
type ReviewComment struct {
	ID        int64
	ReviewID  int64
	InReplyTo int64
	Author    string
	Body      string
	Path      string
	Line      int // 0 serves line: null (an outdated comment)
	StartLine int
	Side      string // default RIGHT
	CommitID  string // default the head SHA
	DiffHunk  string
	CreatedAt time.Time
}

// Review is a pull request review, as posted through the API.
type Review struct {
	ID          int64
	Author      string
	Body        string
	State       string // APPROVED, CHANGES_REQUESTED, COMMENTED, PENDING
	Event       string // the event that was posted
	CommitID    string
	SubmittedAt time.Time
}

// CheckRun is a check run on a commit.
type CheckRun struct {
	ID         int64
	Name       string
	HeadSHA    string
	Status     string // queued, in_progress (default: queued), completed
	Conclusion string // success, failure, neutral, cancelled, skipped, timed_out, action_required; only when completed
	DetailsURL string
	Title      string // output.title
	Summary    string // output.summary
	// App is the slug of the App that made the run through the API; ""
	// for runs a test added (GitHub Actions').
	App       string
	StartedAt time.Time
	// CompletedAt is set when Status becomes completed through
	// UpdateCheckRun and left zero otherwise.
	CompletedAt time.Time
}

// Status is a commit status. The combined status shows the latest per
// Context.
type Status struct {
	ID          int64
	SHA         string // the commit; set by AddStatus
	Context     string // default "default", as GitHub
	State       string // error, failure, pending, success
	TargetURL   string
	Description string
	// Creator is who posted it through the API; "" for a test's.
	Creator   string
	CreatedAt time.Time
}

// repo is one repository's state.
type repo struct {
	owner, name string
	id          int64
	branches    map[string]string // branch → head SHA
	pulls       map[int]*PullRequest
	issues      map[int]*Issue
	nextNumber  int
	comments    map[int][]*Comment
	reviewComms map[int][]*ReviewComment
	reviews     map[int][]*Review
	checkRuns   []*CheckRun
	statuses    []*Status
	counter     int // for generated SHAs
	// noDrafts answers a draft pull request with 422, as GitHub does for a
	// private repository on GitHub Free or Pro.
	noDrafts bool
	// roles are people's roles on the repository (SetPermission).
	roles map[string]string
}

func (r *repo) fullName() string { return r.owner + "/" + r.name }

// sha returns a fresh, deterministic 40-hex SHA.
func (r *repo) sha(kind string) string {
	r.counter++
	sum := sha1.Sum([]byte(fmt.Sprintf("%s/%s#%d", r.fullName(), kind, r.counter)))
	return hex.EncodeToString(sum[:])
}

func (s *Server) now() time.Time { return time.Now().UTC().Truncate(time.Second) }

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

// nodeID builds a GraphQL global id such as "PR_…" that the server can
// decode again (markPullRequestReadyForReview takes one).
func nodeID(kind, key string) string {
	return kind + "_" + base64.RawURLEncoding.EncodeToString([]byte(key))
}

func decodeNodeID(id string) (kind, key string, ok bool) {
	kind, enc, ok := strings.Cut(id, "_")
	if !ok {
		return "", "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return "", "", false
	}
	return kind, string(b), true
}

// repoLocked returns the repository, creating it when create is set. Call
// with s.mu held.
func (s *Server) repoLocked(full string, create bool) *repo {
	key := strings.ToLower(full)
	if r, ok := s.repos[key]; ok || !create {
		return r
	}
	owner, name, ok := strings.Cut(full, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		s.t.Fatalf("githubtest: bad repository %q: want owner/name", full)
	}
	r := &repo{
		owner: owner, name: name, id: s.id(),
		branches:    map[string]string{},
		pulls:       map[int]*PullRequest{},
		issues:      map[int]*Issue{},
		nextNumber:  1,
		comments:    map[int][]*Comment{},
		reviewComms: map[int][]*ReviewComment{},
		reviews:     map[int][]*Review{},
	}
	r.branches[DefaultBranch] = r.sha("branch")
	s.repos[key] = r
	return r
}

// mustRepo returns an existing repository or fails the test.
func (s *Server) mustRepo(full string) *repo {
	s.t.Helper()
	r := s.repoLocked(full, false)
	if r == nil {
		s.t.Fatalf("githubtest: no repository %q", full)
	}
	return r
}

// AddRepo creates a repository with the branch DefaultBranch. Adding
// anything to a repository creates it too.
func (s *Server) AddRepo(full string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repoLocked(full, true)
}

// DisallowDrafts makes the repository refuse draft pull requests, as
// GitHub does for private repositories on GitHub Free and GitHub Pro:
// creating one answers 422 "Draft pull requests are not supported in
// this repository."
func (s *Server) DisallowDrafts(full string) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repoLocked(full, true).noDrafts = true
}

// AddBranch points a branch at sha (generated when empty) and returns the
// SHA, like a push. Creating a pull request through the API needs its head
// and base branches to exist.
func (s *Server) AddBranch(full, branch, sha string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(full, true)
	if sha == "" {
		sha = r.sha("branch")
	}
	r.branches[branch] = sha
	return sha
}

// Branch returns the SHA a branch points at, or "" when it does not exist.
func (s *Server) Branch(full, branch string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mustRepo(full).branches[branch]
}

// takeNumber reserves n (or the next free number) in r, where issues and
// pull requests share numbers as on GitHub. Call with s.mu held.
func (s *Server) takeNumber(r *repo, n int) int {
	s.t.Helper()
	if n == 0 {
		n = r.nextNumber
	}
	if _, ok := r.pulls[n]; ok {
		s.t.Fatalf("githubtest: %s#%d already exists", r.fullName(), n)
	}
	if _, ok := r.issues[n]; ok {
		s.t.Fatalf("githubtest: %s#%d already exists", r.fullName(), n)
	}
	if n <= 0 {
		s.t.Fatalf("githubtest: bad number %d", n)
	}
	r.nextNumber = max(r.nextNumber, n+1)
	return n
}

// AddPullRequest adds a pull request, filling defaults, and returns it as
// stored. Its head and base branches are created (or moved) to match.
func (s *Server) AddPullRequest(full string, pr PullRequest) PullRequest {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(full, true)
	p := pr.clone()
	s.fillPullRequest(r, &p)
	r.pulls[p.Number] = &p
	return p.clone()
}

// fillPullRequest applies defaults. Call with s.mu held.
func (s *Server) fillPullRequest(r *repo, p *PullRequest) {
	p.Number = s.takeNumber(r, p.Number)
	if p.Title == "" {
		p.Title = fmt.Sprintf("Change %d", p.Number)
	}
	if p.Author == "" {
		p.Author = DefaultAuthor
	}
	if p.State == "" {
		p.State = "open"
	}
	if p.Base == "" {
		p.Base = DefaultBranch
	}
	if p.BaseSHA == "" {
		p.BaseSHA = r.branches[p.Base]
	}
	if p.BaseSHA == "" {
		p.BaseSHA = r.sha("branch")
	}
	r.branches[p.Base] = p.BaseSHA
	if p.Head == "" {
		p.Head = fmt.Sprintf("feature-%d", p.Number)
	}
	if p.HeadSHA == "" {
		p.HeadSHA = r.branches[p.Head]
	}
	if p.HeadSHA == "" {
		p.HeadSHA = r.sha("branch")
	}
	r.branches[p.Head] = p.HeadSHA
	if p.Commits == 0 {
		p.Commits = 1
	}
	for i := range p.Files {
		f := &p.Files[i]
		if f.Status == "" {
			f.Status = "modified"
		}
		if f.SHA == "" {
			sum := sha1.Sum([]byte(f.Filename + "\x00" + f.Patch))
			f.SHA = hex.EncodeToString(sum[:])
		}
	}
	now := s.now()
	if p.CreatedAt.IsZero() {
		p.CreatedAt = now
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.CreatedAt
	}
	if p.Merged {
		p.State = "closed"
		if p.MergedAt.IsZero() {
			p.MergedAt = now
		}
		if p.MergeCommitSHA == "" {
			p.MergeCommitSHA = r.sha("merge")
		}
	}
	if p.State == "closed" && p.ClosedAt.IsZero() {
		p.ClosedAt = now
	}
	p.ID = s.id()
	p.NodeID = nodeID("PR", fmt.Sprintf("%s#%d", strings.ToLower(r.fullName()), p.Number))
}

// PullRequest returns a pull request as currently stored: after a merge
// through the API it is closed, merged, with MergeMethod set.
func (s *Server) PullRequest(full string, number int) PullRequest {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.mustRepo(full).pulls[number]
	if !ok {
		s.t.Fatalf("githubtest: no pull request %s#%d", full, number)
	}
	return p.clone()
}

// PullRequests returns every pull request of a repository, by number,
// including those created through the API.
func (s *Server) PullRequests(full string) []PullRequest {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(full)
	var out []PullRequest
	for _, n := range sortedKeys(r.pulls) {
		out = append(out, r.pulls[n].clone())
	}
	return out
}

// UpdatePullRequest changes a stored pull request, for state that moves
// between calls: a push (HeadSHA), a conflict (MergeableState), a merge
// elsewhere (Merged, State). The head branch follows HeadSHA.
func (s *Server) UpdatePullRequest(full string, number int, change func(*PullRequest)) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(full)
	p, ok := r.pulls[number]
	if !ok {
		s.t.Fatalf("githubtest: no pull request %s#%d", full, number)
	}
	change(p)
	p.Number = number
	r.branches[p.Head] = p.HeadSHA
	now := s.now()
	p.UpdatedAt = now
	// Keep a merge or close done by the test as consistent as one done
	// through the API: merged_at, merge_commit_sha and closed_at set.
	if p.Merged {
		p.State = "closed"
		if p.MergedAt.IsZero() {
			p.MergedAt = now
		}
		if p.MergeCommitSHA == "" {
			p.MergeCommitSHA = r.sha("merge")
		}
	}
	if p.State == "closed" && p.ClosedAt.IsZero() {
		p.ClosedAt = now
	}
}

// AddIssue adds an issue, filling defaults, and returns it as stored.
func (s *Server) AddIssue(full string, is Issue) Issue {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(full, true)
	i := is
	i.Labels = slices.Clone(is.Labels)
	i.Number = s.takeNumber(r, i.Number)
	if i.Title == "" {
		i.Title = fmt.Sprintf("Issue %d", i.Number)
	}
	if i.Author == "" {
		i.Author = DefaultAuthor
	}
	if i.State == "" {
		i.State = "open"
	}
	now := s.now()
	if i.CreatedAt.IsZero() {
		i.CreatedAt = now
	}
	if i.UpdatedAt.IsZero() {
		i.UpdatedAt = i.CreatedAt
	}
	if i.State == "closed" && i.ClosedAt.IsZero() {
		i.ClosedAt = now
	}
	i.ID = s.id()
	i.NodeID = nodeID("I", fmt.Sprintf("%s#%d", strings.ToLower(r.fullName()), i.Number))
	r.issues[i.Number] = &i
	out := i
	out.Labels = slices.Clone(i.Labels)
	return out
}

// Issue returns an issue as currently stored.
func (s *Server) Issue(full string, number int) Issue {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.mustRepo(full).issues[number]
	if !ok {
		s.t.Fatalf("githubtest: no issue %s#%d", full, number)
	}
	out := *i
	out.Labels = slices.Clone(i.Labels)
	return out
}

// UpdateIssue changes a stored issue, such as closing it upstream.
func (s *Server) UpdateIssue(full string, number int, change func(*Issue)) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.mustRepo(full).issues[number]
	if !ok {
		s.t.Fatalf("githubtest: no issue %s#%d", full, number)
	}
	change(i)
	i.Number = number
	i.UpdatedAt = s.now()
	if i.State == "closed" && i.ClosedAt.IsZero() {
		i.ClosedAt = i.UpdatedAt
	}
}

// exists reports whether number is an issue or pull request. Call with
// s.mu held.
func (r *repo) exists(number int) bool {
	_, isPR := r.pulls[number]
	_, isIssue := r.issues[number]
	return isPR || isIssue
}

// AddComment adds a conversation comment to an issue or pull request and
// returns it with its id.
func (s *Server) AddComment(full string, number int, c Comment) Comment {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(full)
	if !r.exists(number) {
		s.t.Fatalf("githubtest: no issue or pull request %s#%d", full, number)
	}
	return *s.addComment(r, number, c)
}

// addComment stores a comment. Call with s.mu held.
func (s *Server) addComment(r *repo, number int, c Comment) *Comment {
	if c.Author == "" {
		c.Author = DefaultAuthor
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = s.now()
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = c.CreatedAt
	}
	c.ID = s.id()
	r.comments[number] = append(r.comments[number], &c)
	return &c
}

// Comments returns the conversation comments of an issue or pull request,
// oldest first, including those posted through the API.
func (s *Server) Comments(full string, number int) []Comment {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.mustRepo(full).comments[number] {
		out = append(out, *c)
	}
	return out
}

// AddReviewComment adds an inline review comment to a pull request.
func (s *Server) AddReviewComment(full string, number int, rc ReviewComment) ReviewComment {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(full)
	p, ok := r.pulls[number]
	if !ok {
		s.t.Fatalf("githubtest: no pull request %s#%d", full, number)
	}
	if rc.Author == "" {
		rc.Author = DefaultAuthor
	}
	if rc.Side == "" {
		rc.Side = "RIGHT"
	}
	if rc.CommitID == "" {
		rc.CommitID = p.HeadSHA
	}
	if rc.CreatedAt.IsZero() {
		rc.CreatedAt = s.now()
	}
	rc.ID = s.id()
	if rc.ReviewID == 0 {
		rc.ReviewID = s.id()
	}
	r.reviewComms[number] = append(r.reviewComms[number], &rc)
	return rc
}

// Reviews returns the reviews posted on a pull request, oldest first.
func (s *Server) Reviews(full string, number int) []Review {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Review
	for _, rv := range s.mustRepo(full).reviews[number] {
		out = append(out, *rv)
	}
	return out
}

// ReviewComments returns the line comments on a pull request, oldest
// first: those a test added and those reviews posted.
func (s *Server) ReviewComments(full string, number int) []ReviewComment {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ReviewComment
	for _, rc := range s.mustRepo(full).reviewComms[number] {
		out = append(out, *rc)
	}
	return out
}

// AddCheckRun adds a check run on ref (a SHA or a branch name, resolved
// now) and returns it with its id. Status defaults to queued.
func (s *Server) AddCheckRun(full, ref string, cr CheckRun) CheckRun {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(full, true)
	sha, ok := r.resolve(ref)
	if !ok {
		s.t.Fatalf("githubtest: no branch or SHA %q in %s", ref, full)
	}
	cr.HeadSHA = sha
	if cr.Status == "" {
		cr.Status = "queued"
	}
	if cr.Name == "" {
		s.t.Fatalf("githubtest: check run needs a Name")
	}
	s.checkRunValid(cr)
	now := s.now()
	if cr.StartedAt.IsZero() {
		cr.StartedAt = now
	}
	if cr.Status == "completed" && cr.CompletedAt.IsZero() {
		cr.CompletedAt = now
	}
	cr.ID = s.id()
	r.checkRuns = append(r.checkRuns, &cr)
	return cr
}

// UpdateCheckRun changes a check run, such as turning it green:
//
//	srv.UpdateCheckRun("o/r", id, func(cr *githubtest.CheckRun) { cr.Status, cr.Conclusion = "completed", "success" })
func (s *Server) UpdateCheckRun(full string, id int64, change func(*CheckRun)) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cr := range s.mustRepo(full).checkRuns {
		if cr.ID == id {
			change(cr)
			cr.ID = id
			s.checkRunValid(*cr)
			if cr.Status == "completed" && cr.CompletedAt.IsZero() {
				cr.CompletedAt = s.now()
			}
			return
		}
	}
	s.t.Fatalf("githubtest: no check run %d in %s", id, full)
}

// checkRunValid fails the test for a check run GitHub would not hold: a
// completed run always has a conclusion, and only a completed one has it.
func (s *Server) checkRunValid(cr CheckRun) {
	s.t.Helper()
	switch cr.Status {
	case "queued", "in_progress", "waiting", "requested", "pending":
		if cr.Conclusion != "" {
			s.t.Fatalf("githubtest: check run %q is %s but has conclusion %q", cr.Name, cr.Status, cr.Conclusion)
		}
	case "completed":
		if cr.Conclusion == "" {
			s.t.Fatalf("githubtest: completed check run %q needs a Conclusion", cr.Name)
		}
	default:
		s.t.Fatalf("githubtest: bad check run status %q", cr.Status)
	}
}

// AddStatus adds a commit status on ref (a SHA or branch name), like
// POST /repos/{o}/{r}/statuses/{sha}, and returns it with its id.
func (s *Server) AddStatus(full, ref string, st Status) Status {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(full, true)
	sha, ok := r.resolve(ref)
	if !ok {
		s.t.Fatalf("githubtest: no branch or SHA %q in %s", ref, full)
	}
	if st.Context == "" {
		st.Context = "default"
	}
	switch st.State {
	case "error", "failure", "pending", "success":
	default:
		s.t.Fatalf("githubtest: bad status state %q: want error, failure, pending or success", st.State)
	}
	if st.CreatedAt.IsZero() {
		st.CreatedAt = s.now()
	}
	st.ID = s.id()
	st.SHA = sha
	r.statuses = append(r.statuses, &st)
	return st
}

// Statuses returns every commit status of a repository on ref (a SHA or
// branch), oldest first, including those posted through the API.
func (s *Server) Statuses(full, ref string) []Status {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(full)
	sha, _ := r.resolve(ref)
	var out []Status
	for _, st := range r.statuses {
		if st.SHA == sha {
			out = append(out, *st)
		}
	}
	return out
}

// CheckRuns returns every check run of a repository, oldest first,
// including those an App made through the API.
func (s *Server) CheckRuns(full string) []CheckRun {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, cr := range s.mustRepo(full).checkRuns {
		out = append(out, *cr)
	}
	return out
}

// resolve maps a ref to a SHA: a branch name, "heads/<branch>", or a
// 40-hex SHA.
func (r *repo) resolve(ref string) (string, bool) {
	if sha, ok := r.branches[ref]; ok {
		return sha, true
	}
	if b, ok := strings.CutPrefix(ref, "heads/"); ok {
		sha, ok := r.branches[b]
		return sha, ok
	}
	if len(ref) == 40 {
		if _, err := hex.DecodeString(ref); err == nil {
			return strings.ToLower(ref), true
		}
	}
	return "", false
}

func (p PullRequest) clone() PullRequest {
	p.Labels = slices.Clone(p.Labels)
	p.Files = slices.Clone(p.Files)
	p.ClosingIssues = slices.Clone(p.ClosingIssues)
	return p
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
