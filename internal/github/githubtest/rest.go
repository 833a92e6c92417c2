package githubtest

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Documentation URLs of the endpoints, as GitHub cites them in errors.
const (
	docPulls    = "https://docs.github.com/rest/pulls/pulls"
	docReviews  = "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request"
	docComments = "https://docs.github.com/rest/issues/comments#create-an-issue-comment"
	docChecks   = "https://docs.github.com/rest/checks/runs#list-check-runs-for-a-git-reference"
	docMerge    = "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request"
	docFiles    = "https://docs.github.com/rest/pulls/pulls#list-pull-requests-files"
)

// maxListedFiles is GitHub's cap on /pulls/N/files.
const maxListedFiles = 3000

// GitHub's limits for rendering a pull request diff.
const (
	maxDiffFiles = 300
	maxDiffLines = 20000
)

func (s *Server) routes() {
	p := s.prefix
	h := func(pattern string, fn http.HandlerFunc) {
		method, path, _ := strings.Cut(pattern, " ")
		s.mux.HandleFunc(method+" "+p+path, fn)
	}
	h("GET /user", s.getUser)
	h("GET /repos/{owner}/{repo}/installation", s.getInstallation)
	h("POST /app/installations/{id}/access_tokens", s.createAccessToken)
	h("GET /repos/{owner}/{repo}/pulls/{number}", s.getPull)
	h("POST /repos/{owner}/{repo}/pulls", s.createPull)
	h("GET /repos/{owner}/{repo}/pulls/{number}/files", s.listFiles)
	h("GET /repos/{owner}/{repo}/pulls/{number}/comments", s.listReviewComments)
	h("POST /repos/{owner}/{repo}/pulls/{number}/reviews", s.createReview)
	h("PUT /repos/{owner}/{repo}/pulls/{number}/merge", s.merge)
	h("GET /repos/{owner}/{repo}/issues", s.listIssues)
	h("GET /repos/{owner}/{repo}/issues/{number}", s.getIssue)
	h("GET /repos/{owner}/{repo}/issues/{number}/comments", s.listComments)
	h("POST /repos/{owner}/{repo}/issues/{number}/comments", s.createComment)
	h("GET /repos/{owner}/{repo}/commits/{rest...}", s.commitChecks)
	h("POST /repos/{owner}/{repo}/statuses/{sha}", s.createStatus)
	h("GET /repos/{owner}/{repo}/collaborators/{username}/permission", s.getPermission)
	h("GET /repos/{owner}/{repo}/pulls/{number}/reviews", s.listReviews)
	h("GET /repos/{owner}/{repo}/issues/comments", s.listRepoComments)
	h("POST /repos/{owner}/{repo}/issues/comments/{id}/reactions", s.createReaction)
	h("POST /repos/{owner}/{repo}/check-runs", s.createCheckRun)
	h("PATCH /repos/{owner}/{repo}/check-runs/{id}", s.updateCheckRun)
	s.mux.HandleFunc("POST "+s.gql, s.graphql)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not Found", docREST)
	})
}

// urlsFor builds the link bases for a request.
func (s *Server) urlsFor(r *http.Request) urls {
	base := "http://" + r.Host
	u := urls{api: base + s.prefix, web: WebURL}
	if s.prefix != "" {
		u.web = base
	}
	return u
}

// lookup finds the repository of a request and, when the route has one,
// the number. It writes a 404 and returns false when either is missing.
// On success it returns with s.mu held; the caller unlocks.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, doc string) (*repo, int, bool) {
	s.mu.Lock()
	rp := s.repoLocked(r.PathValue("owner")+"/"+r.PathValue("repo"), false)
	if rp == nil || !identityOf(r).sees(rp.fullName()) {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "Not Found", doc)
		return nil, 0, false
	}
	n := 0
	if v := r.PathValue("number"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			s.mu.Unlock()
			writeError(w, http.StatusNotFound, "Not Found", doc)
			return nil, 0, false
		}
	}
	return rp, n, true
}

// page cuts items to the requested page (per_page default 30, max 100)
// and sets GitHub's Link header: prev, next, last, first, each keeping the
// request's other query parameters.
func page[T any](w http.ResponseWriter, r *http.Request, items []T) []T {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per < 1 {
		per = 30
	}
	per = min(per, 100)
	n, err := strconv.Atoi(q.Get("page"))
	if err != nil || n < 1 {
		n = 1
	}
	last := max((len(items)+per-1)/per, 1)
	link := func(p int) string {
		q2 := url.Values{}
		for k, v := range q {
			q2[k] = v
		}
		q2.Set("page", strconv.Itoa(p))
		return fmt.Sprintf("<http://%s%s?%s>", r.Host, r.URL.Path, q2.Encode())
	}
	var links []string
	if n > 1 {
		links = append(links, link(min(n-1, last))+`; rel="prev"`)
	}
	if n < last {
		links = append(links, link(n+1)+`; rel="next"`, link(last)+`; rel="last"`)
	}
	if n > 1 {
		links = append(links, link(1)+`; rel="first"`)
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	start := (n - 1) * per
	if start >= len(items) {
		return []T{}
	}
	return items[start:min(start+per, len(items))]
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request) {
	if identityOf(r).install != nil {
		// An installation token acts as the App, which is no user.
		writeError(w, http.StatusForbidden, "Resource not accessible by integration", "https://docs.github.com/rest/users/users#get-the-authenticated-user")
		return
	}
	s.mu.Lock()
	u := s.urlsFor(r)
	v := viewerJSON{userJSON: s.user(u, s.viewer), Name: strPtr(strings.ToUpper(s.viewer[:1]) + s.viewer[1:]),
		CreatedAt: "2011-01-25T18:44:36Z", UpdatedAt: "2024-01-01T00:00:00Z"}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, v)
}

// wantsDiff reports whether the Accept header asks for the diff media type
// (application/vnd.github.diff, or the older .v3.diff).
func wantsDiff(r *http.Request) bool {
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/vnd.github.diff") || strings.Contains(a, "application/vnd.github.v3.diff")
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request) {
	rp, n, ok := s.lookup(w, r, docPulls+"#get-a-pull-request")
	if !ok {
		return
	}
	p, ok := rp.pulls[n]
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "Not Found", docPulls+"#get-a-pull-request")
		return
	}
	if !wantsDiff(r) {
		body := s.pullJSON(s.urlsFor(r), rp, p)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, body)
		return
	}
	files := slices.Clone(p.Files)
	diff := p.Diff
	limits := s.diffLimits
	s.mu.Unlock()

	if limits && len(files) > maxDiffFiles {
		writeJSON(w, http.StatusNotAcceptable, errorBody{
			Message:          fmt.Sprintf("Sorry, the diff exceeded the maximum number of files (%d). Consider using 'List pull requests files' API or locally cloning the repository instead.", maxDiffFiles),
			Errors:           []any{fieldError{Resource: "PullRequest", Field: "diff", Code: "too_large"}},
			DocumentationURL: docFiles, Status: "406",
		})
		return
	}
	if limits && countLines(files) > maxDiffLines {
		writeJSON(w, http.StatusNotAcceptable, errorBody{
			Message:          fmt.Sprintf("Sorry, the diff exceeded the maximum number of lines (%d)", maxDiffLines),
			Errors:           []any{fieldError{Resource: "PullRequest", Field: "diff", Code: "too_large"}},
			DocumentationURL: docPulls + "#get-a-pull-request", Status: "406",
		})
		return
	}
	if diff == nil {
		diff = FileDiff(files)
	}
	w.Header().Set("Content-Type", "application/vnd.github.diff; charset=utf-8")
	w.Header().Set("X-Github-Media-Type", "github.v3; param=diff")
	w.WriteHeader(http.StatusOK)
	// The status is sent; a generator error can only cut the stream, which
	// is what a client sees when GitHub drops a connection.
	if err := diff(w); err != nil {
		panic(http.ErrAbortHandler)
	}
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	rp, n, ok := s.lookup(w, r, docFiles)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	p, ok := rp.pulls[n]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found", docFiles)
		return
	}
	files := p.Files
	if len(files) > maxListedFiles {
		files = files[:maxListedFiles]
	}
	u := s.urlsFor(r)
	out := []fileJSON{}
	for _, f := range page(w, r, files) {
		out = append(out, fileJSONOf(u, rp, p.HeadSHA, f))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listReviewComments(w http.ResponseWriter, r *http.Request) {
	rp, n, ok := s.lookup(w, r, docPulls)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	if _, ok := rp.pulls[n]; !ok {
		writeError(w, http.StatusNotFound, "Not Found", docPulls)
		return
	}
	u := s.urlsFor(r)
	out := []reviewCommentJSON{}
	for _, rc := range page(w, r, rp.reviewComms[n]) {
		out = append(out, s.reviewCommentJSON(u, rp, n, rc))
	}
	writeJSON(w, http.StatusOK, out)
}

// decodeBody reads a JSON request body, answering 400 "Problems parsing
// JSON" as GitHub does when it is malformed.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON", docREST)
		return false
	}
	return true
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title *string `json:"title"`
		Head  string  `json:"head"`
		Base  string  `json:"base"`
		Body  *string `json:"body"`
		Draft *bool   `json:"draft"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	rp, _, ok := s.lookup(w, r, docPulls+"#create-a-pull-request")
	if !ok {
		return
	}
	defer s.mu.Unlock()
	doc := docPulls + "#create-a-pull-request"
	head := in.Head
	if owner, branch, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, rp.owner) {
			writeValidation(w, doc, fieldError{Resource: "PullRequest", Field: "head", Code: "invalid"})
			return
		}
		head = branch
	}
	switch {
	case in.Title == nil || *in.Title == "":
		writeValidation(w, doc, fieldError{Resource: "PullRequest", Field: "title", Code: "missing_field"})
		return
	case rp.branches[in.Base] == "":
		writeValidation(w, doc, fieldError{Resource: "PullRequest", Field: "base", Code: "invalid"})
		return
	case rp.branches[head] == "":
		writeValidation(w, doc, fieldError{Resource: "PullRequest", Field: "head", Code: "invalid"})
		return
	case rp.branches[head] == rp.branches[in.Base]:
		writeValidation(w, doc, fieldError{Resource: "PullRequest", Code: "custom",
			Message: fmt.Sprintf("No commits between %s and %s", in.Base, head)})
		return
	case in.Draft != nil && *in.Draft && rp.noDrafts:
		// GitHub's answer carries the message alone, no "errors" list.
		writeError(w, http.StatusUnprocessableEntity, "Draft pull requests are not supported in this repository.", doc)
		return
	}
	for _, n := range sortedKeys(rp.pulls) {
		p := rp.pulls[n]
		if p.State == "open" && p.Head == head && p.Base == in.Base {
			writeValidation(w, doc, fieldError{Resource: "PullRequest", Code: "custom",
				Message: fmt.Sprintf("A pull request already exists for %s:%s.", rp.owner, head)})
			return
		}
	}
	p := PullRequest{Title: *in.Title, Head: head, HeadSHA: rp.branches[head], Base: in.Base,
		BaseSHA: rp.branches[in.Base], Author: actor(r)}
	if in.Body != nil {
		p.Body = *in.Body
	}
	if in.Draft != nil {
		p.Draft = *in.Draft
	}
	s.fillPullRequest(rp, &p)
	rp.pulls[p.Number] = &p
	u := s.urlsFor(r)
	w.Header().Set("Location", fmt.Sprintf("%s/pulls/%d", u.repoAPI(rp), p.Number))
	writeJSON(w, http.StatusCreated, s.pullJSON(u, rp, &p))
}

func (s *Server) createReview(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body     string `json:"body"`
		Event    string `json:"event"`
		CommitID string `json:"commit_id"`
		Comments []struct {
			Path     string `json:"path"`
			Body     string `json:"body"`
			Line     int    `json:"line"`
			Side     string `json:"side"`
			Position int    `json:"position"`
		} `json:"comments"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	rp, n, ok := s.lookup(w, r, docReviews)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	p, ok := rp.pulls[n]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found", docReviews)
		return
	}
	state := ""
	switch in.Event {
	case "APPROVE":
		state = "APPROVED"
	case "REQUEST_CHANGES":
		state = "CHANGES_REQUESTED"
	case "COMMENT":
		state = "COMMENTED"
	case "":
		state = "PENDING" // GitHub keeps a review without an event as a draft
	default:
		writeValidation(w, docReviews, fieldError{Resource: "PullRequestReview", Field: "event", Code: "invalid"})
		return
	}
	own := strings.EqualFold(p.Author, actor(r))
	switch {
	case own && in.Event == "APPROVE":
		writeUnprocessable(w, docReviews, "Review Can not approve your own pull request")
		return
	case own && in.Event == "REQUEST_CHANGES":
		writeUnprocessable(w, docReviews, "Review Can not request changes on your own pull request")
		return
	case (in.Event == "REQUEST_CHANGES" || in.Event == "COMMENT") && strings.TrimSpace(in.Body) == "":
		writeUnprocessable(w, docReviews, "Review body is required for REQUEST_CHANGES and COMMENT events")
		return
	}
	commit := in.CommitID
	if commit == "" {
		commit = p.HeadSHA
	}
	// Line comments: each must name a line the pull request's diff shows
	// (when the model lists its files), or GitHub refuses the review.
	var comments []*ReviewComment
	for _, c := range in.Comments {
		side := c.Side
		if side == "" {
			side = "RIGHT"
		}
		if c.Path == "" || c.Body == "" || c.Line < 1 && c.Position < 1 || side != "RIGHT" && side != "LEFT" {
			writeValidation(w, docReviews, fieldError{Resource: "PullRequestReviewComment", Field: "comments", Code: "invalid"})
			return
		}
		hunk := ""
		if len(p.Files) > 0 {
			i := slices.IndexFunc(p.Files, func(f File) bool { return f.Filename == c.Path })
			if i < 0 {
				writeUnprocessable(w, docReviews, "Path could not be resolved")
				return
			}
			var shown bool
			if hunk, shown = hunkShowing(p.Files[i].Patch, c.Line, side); !shown {
				writeUnprocessable(w, docReviews, "Line could not be resolved")
				return
			}
		}
		comments = append(comments, &ReviewComment{Author: actor(r), Body: c.Body, Path: c.Path, Line: c.Line, Side: side, CommitID: commit, DiffHunk: hunk})
	}
	rv := &Review{ID: s.id(), Author: actor(r), Body: in.Body, State: state, Event: in.Event, CommitID: commit}
	if state != "PENDING" {
		rv.SubmittedAt = s.now()
	}
	for _, c := range comments {
		c.ID, c.ReviewID, c.CreatedAt = s.id(), rv.ID, s.now()
		rp.reviewComms[n] = append(rp.reviewComms[n], c)
	}
	rp.reviews[n] = append(rp.reviews[n], rv)
	writeJSON(w, http.StatusOK, s.reviewJSON(s.urlsFor(r), rp, n, rv))
}

// hunkShowing returns the hunk of patch (header to the line) that shows
// line on side (RIGHT: the new file's lines, added or context; LEFT:
// the old file's, deleted or context), and whether one does.
func hunkShowing(patch string, line int, side string) (string, bool) {
	var oldN, newN, start int
	inHunk := false
	lines := strings.Split(patch, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "@@") {
			var a, b int
			if _, err := fmt.Sscanf(l, "@@ -%d", &a); err != nil {
				return "", false
			}
			plus := strings.Index(l, " +")
			if plus < 0 {
				return "", false
			}
			if _, err := fmt.Sscanf(l[plus:], " +%d", &b); err != nil {
				return "", false
			}
			oldN, newN, start, inHunk = a, b, i, true
			continue
		}
		if !inHunk || l == "" && i == len(lines)-1 {
			continue
		}
		var onOld, onNew bool
		switch {
		case strings.HasPrefix(l, "+"):
			onNew = true
		case strings.HasPrefix(l, "-"):
			onOld = true
		case strings.HasPrefix(l, "\\"):
			continue
		default:
			onOld, onNew = true, true
		}
		if side == "RIGHT" && onNew && newN == line || side == "LEFT" && onOld && oldN == line {
			return strings.Join(lines[start:i+1], "\n"), true
		}
		if onOld {
			oldN++
		}
		if onNew {
			newN++
		}
	}
	return "", false
}

func (s *Server) merge(w http.ResponseWriter, r *http.Request) {
	var in struct {
		CommitTitle   string `json:"commit_title"`
		CommitMessage string `json:"commit_message"`
		SHA           string `json:"sha"`
		MergeMethod   string `json:"merge_method"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	rp, n, ok := s.lookup(w, r, docMerge)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	p, ok := rp.pulls[n]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found", docMerge)
		return
	}
	method := in.MergeMethod
	if method == "" {
		method = "merge"
	}
	switch {
	case method != "merge" && method != "squash" && method != "rebase":
		writeValidation(w, docMerge, fieldError{Resource: "PullRequest", Field: "merge_method", Code: "invalid"})
	case p.Merged || p.State != "open":
		writeError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable", docMerge)
	case p.Draft:
		writeError(w, http.StatusMethodNotAllowed, "Pull Request is still a draft", docMerge)
	case p.MergeableState == "dirty":
		writeError(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable", docMerge)
	case p.MergeableState == "blocked":
		writeError(w, http.StatusMethodNotAllowed, "At least 1 approving review is required by reviewers with write access.", docMerge)
	case in.SHA != "" && !strings.EqualFold(in.SHA, p.HeadSHA):
		writeError(w, http.StatusConflict, "Head branch was modified. Review and try the merge again.", docMerge)
	default:
		now := s.now()
		p.Merged, p.State, p.MergedAt, p.ClosedAt, p.UpdatedAt = true, "closed", now, now, now
		p.MergedBy, p.MergeMethod = actor(r), method
		p.MergeCommitSHA = rp.sha("merge")
		rp.branches[p.Base] = p.MergeCommitSHA
		if p.Base == DefaultBranch {
			for _, in := range p.ClosingIssues {
				if is, ok := rp.issues[in]; ok && is.State == "open" {
					is.State, is.StateReason, is.ClosedAt, is.UpdatedAt = "closed", "completed", now, now
				}
			}
		}
		writeJSON(w, http.StatusOK, mergeJSON{SHA: p.MergeCommitSHA, Merged: true, Message: "Pull Request successfully merged"})
	}
}

// issueItem is one entry of the repository issue list, which mixes
// issues and pull requests.
type issueItem struct {
	number  int
	created int64
	state   string
	labels  []string
}

func (s *Server) listIssues(w http.ResponseWriter, r *http.Request) {
	rp, _, ok := s.lookup(w, r, "https://docs.github.com/rest/issues/issues#list-repository-issues")
	if !ok {
		return
	}
	defer s.mu.Unlock()
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var want []string
	if l := q.Get("labels"); l != "" {
		want = strings.Split(l, ",")
	}
	var items []issueItem
	for n, is := range rp.issues {
		items = append(items, issueItem{n, is.CreatedAt.UnixNano(), is.State, is.Labels})
	}
	for n, p := range rp.pulls {
		items = append(items, issueItem{n, p.CreatedAt.UnixNano(), p.State, p.Labels})
	}
	// Default sort: created, newest first.
	slices.SortFunc(items, func(a, b issueItem) int {
		if c := cmp.Compare(b.created, a.created); c != 0 {
			return c
		}
		return cmp.Compare(b.number, a.number)
	})
	var nums []int
	for _, it := range items {
		if state != "all" && it.state != state {
			continue
		}
		if !hasLabels(it.labels, want) {
			continue
		}
		nums = append(nums, it.number)
	}
	u := s.urlsFor(r)
	out := []issueJSON{}
	for _, n := range page(w, r, nums) {
		out = append(out, s.issueJSON(u, rp, n))
	}
	writeCached(w, r, out)
}

// writeCached answers like GitHub's conditional requests: the ETag is a
// hash of the body and its Link header, and a request whose
// If-None-Match names it gets 304 Not Modified with no body (which
// GitHub does not count against the rate limit).
func writeCached(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(append(b, w.Header().Get("Link")...))
	etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "private, max-age=60, s-maxage=60")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// hasLabels reports whether have includes every label in want, ignoring
// case as GitHub does.
func hasLabels(have, want []string) bool {
	for _, w := range want {
		w = strings.TrimSpace(w)
		if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, w) }) {
			return false
		}
	}
	return true
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	doc := "https://docs.github.com/rest/issues/issues#get-an-issue"
	rp, n, ok := s.lookup(w, r, doc)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	if !rp.exists(n) {
		writeError(w, http.StatusNotFound, "Not Found", doc)
		return
	}
	writeJSON(w, http.StatusOK, s.issueJSON(s.urlsFor(r), rp, n))
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	doc := "https://docs.github.com/rest/issues/comments#list-issue-comments"
	rp, n, ok := s.lookup(w, r, doc)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	if !rp.exists(n) {
		writeError(w, http.StatusNotFound, "Not Found", doc)
		return
	}
	u := s.urlsFor(r)
	out := []commentJSON{}
	for _, c := range page(w, r, rp.comments[n]) {
		out = append(out, s.commentJSON(u, rp, n, c))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body string `json:"body"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	rp, n, ok := s.lookup(w, r, docComments)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	if !rp.exists(n) {
		writeError(w, http.StatusNotFound, "Not Found", docComments)
		return
	}
	if strings.TrimSpace(in.Body) == "" {
		writeValidation(w, docComments, fieldError{Resource: "IssueComment", Field: "body", Code: "missing_field"})
		return
	}
	c := s.addComment(rp, n, Comment{Author: actor(r), Body: in.Body})
	u := s.urlsFor(r)
	cj := s.commentJSON(u, rp, n, c)
	w.Header().Set("Location", cj.URL)
	writeJSON(w, http.StatusCreated, cj)
}

// commitChecks serves /commits/{ref}/check-runs and /commits/{ref}/status,
// where ref may contain slashes (a branch such as feature/x).
func (s *Server) commitChecks(w http.ResponseWriter, r *http.Request) {
	rest := r.PathValue("rest")
	var ref, kind string
	switch {
	case strings.HasSuffix(rest, "/check-runs"):
		ref, kind = strings.TrimSuffix(rest, "/check-runs"), "check-runs"
	case strings.HasSuffix(rest, "/status"):
		ref, kind = strings.TrimSuffix(rest, "/status"), "status"
	default:
		writeError(w, http.StatusNotFound, "Not Found", docREST)
		return
	}
	rp, _, ok := s.lookup(w, r, docChecks)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	sha, ok := rp.resolve(ref)
	if !ok {
		writeError(w, http.StatusUnprocessableEntity, "No commit found for SHA: "+ref, docChecks)
		return
	}
	u := s.urlsFor(r)
	if kind == "check-runs" {
		// filter=latest (the default): the most recent run per name.
		var runs []*CheckRun
		latest := map[string]int{}
		for _, cr := range rp.checkRuns {
			if cr.HeadSHA != sha {
				continue
			}
			if i, ok := latest[cr.Name]; ok && r.URL.Query().Get("filter") != "all" {
				runs[i] = cr
				continue
			}
			latest[cr.Name] = len(runs)
			runs = append(runs, cr)
		}
		out := checkRunsJSON{TotalCount: len(runs), CheckRuns: []checkRunJSON{}}
		for _, cr := range page(w, r, runs) {
			out.CheckRuns = append(out.CheckRuns, s.checkRunJSON(u, rp, cr))
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	// The combined status: the latest status per context.
	var sts []*Status
	byContext := map[string]int{}
	for _, st := range rp.statuses {
		if st.SHA != sha {
			continue
		}
		if i, ok := byContext[st.Context]; ok {
			sts[i] = st
			continue
		}
		byContext[st.Context] = len(sts)
		sts = append(sts, st)
	}
	out := combinedStatusJSON{
		State: combinedState(sts), Statuses: []statusJSON{}, SHA: sha, TotalCount: len(sts),
		Repository: s.repoJSON(u, rp), CommitURL: u.repoAPI(rp) + "/commits/" + sha,
		URL: u.repoAPI(rp) + "/commits/" + sha + "/status",
	}
	for _, st := range page(w, r, sts) {
		out.Statuses = append(out.Statuses, s.statusJSON(u, rp, st))
	}
	writeJSON(w, http.StatusOK, out)
}

// combinedState is GitHub's rule: failure if any status is error or
// failure, pending if there are none or any is pending, else success.
func combinedState(sts []*Status) string {
	if len(sts) == 0 {
		return "pending"
	}
	state := "success"
	for _, st := range sts {
		switch st.State {
		case "error", "failure":
			return "failure"
		case "pending":
			state = "pending"
		}
	}
	return state
}
