package githubtest

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Collaborators, reactions, a repository's comments and a pull request's
// reviews: what baton reads to act on people's comments.

const (
	docPermission = "https://docs.github.com/rest/collaborators/collaborators#get-repository-permissions-for-a-user"
	docReactions  = "https://docs.github.com/rest/reactions/reactions#create-reaction-for-an-issue-comment"
)

// Reaction is a reaction on a comment.
type Reaction struct {
	ID      int64
	User    string
	Content string // +1, -1, laugh, confused, heart, hooray, rocket, eyes
}

// SetPermission gives login a role on a repository: admin, maintain,
// write, triage or read. Anyone not given one reads (a public
// repository); the repository's owner is admin.
func (s *Server) SetPermission(full, login, role string) {
	s.t.Helper()
	switch role {
	case "admin", "maintain", "write", "triage", "read", "none":
	default:
		s.t.Fatalf("githubtest: bad role %q", role)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repoLocked(full, true)
	if r.roles == nil {
		r.roles = map[string]string{}
	}
	r.roles[strings.ToLower(login)] = role
}

// role returns login's role on r. Call with s.mu held.
func (r *repo) role(login string) string {
	if role, ok := r.roles[strings.ToLower(login)]; ok {
		return role
	}
	if strings.EqualFold(login, r.owner) {
		return "admin"
	}
	return "read"
}

// getPermission answers GET
// /repos/{owner}/{repo}/collaborators/{username}/permission with GitHub's
// two fields: permission (admin, write, read or none; maintain reads as
// write and triage as read) and role_name (the role itself).
func (s *Server) getPermission(w http.ResponseWriter, r *http.Request) {
	rp, _, ok := s.lookup(w, r, docPermission)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	login := r.PathValue("username")
	role := rp.role(login)
	perm := role
	switch role {
	case "maintain":
		perm = "write"
	case "triage":
		perm = "read"
	}
	u := s.urlsFor(r)
	writeJSON(w, http.StatusOK, map[string]any{"permission": perm, "role_name": role, "user": s.user(u, login)})
}

// AddReview adds a submitted review to a pull request, as a person
// submits one on GitHub; State is APPROVED, CHANGES_REQUESTED or
// COMMENTED.
func (s *Server) AddReview(full string, number int, rv Review) Review {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(full)
	p, ok := r.pulls[number]
	if !ok {
		s.t.Fatalf("githubtest: no pull request %s#%d", full, number)
	}
	rv.Author = cmp.Or(rv.Author, DefaultAuthor)
	rv.CommitID = cmp.Or(rv.CommitID, p.HeadSHA)
	if rv.SubmittedAt.IsZero() {
		rv.SubmittedAt = s.now()
	}
	rv.ID = s.id()
	r.reviews[number] = append(r.reviews[number], &rv)
	return rv
}

// listReviews answers GET /repos/{owner}/{repo}/pulls/{number}/reviews,
// oldest first, with an ETag as GitHub sends one.
func (s *Server) listReviews(w http.ResponseWriter, r *http.Request) {
	rp, n, ok := s.lookup(w, r, docReviews)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	if _, ok := rp.pulls[n]; !ok {
		writeError(w, http.StatusNotFound, "Not Found", docReviews)
		return
	}
	u := s.urlsFor(r)
	out := []reviewJSON{}
	for _, rv := range page(w, r, rp.reviews[n]) {
		out = append(out, s.reviewJSON(u, rp, n, rv))
	}
	writeCached(w, r, out)
}

// listRepoComments answers GET /repos/{owner}/{repo}/issues/comments:
// every issue's and pull request's conversation comments, sorted by
// created (default) or updated, since a time (on updated_at).
func (s *Server) listRepoComments(w http.ResponseWriter, r *http.Request) {
	rp, _, ok := s.lookup(w, r, "https://docs.github.com/rest/issues/comments#list-issue-comments-for-a-repository")
	if !ok {
		return
	}
	defer s.mu.Unlock()
	q := r.URL.Query()
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			writeValidation(w, docComments, fieldError{Resource: "IssueComment", Field: "since", Code: "invalid"})
			return
		}
		since = t
	}
	type item struct {
		number int
		c      *Comment
	}
	var items []item
	for n, cs := range rp.comments {
		for _, c := range cs {
			if since.IsZero() || !c.UpdatedAt.Before(since) {
				items = append(items, item{n, c})
			}
		}
	}
	byUpdated := q.Get("sort") == "updated"
	slices.SortFunc(items, func(a, b item) int {
		ta, tb := a.c.CreatedAt, b.c.CreatedAt
		if byUpdated {
			ta, tb = a.c.UpdatedAt, b.c.UpdatedAt
		}
		if c := ta.Compare(tb); c != 0 {
			return c
		}
		return cmp.Compare(a.c.ID, b.c.ID)
	})
	if q.Get("direction") == "desc" {
		slices.Reverse(items)
	}
	u := s.urlsFor(r)
	out := []commentJSON{}
	for _, it := range page(w, r, items) {
		out = append(out, s.commentJSON(u, rp, it.number, it.c))
	}
	writeJSON(w, http.StatusOK, out)
}

// createReaction answers POST
// /repos/{owner}/{repo}/issues/comments/{id}/reactions: 201 for a new
// reaction, 200 with the existing one when the user already reacted so.
func (s *Server) createReaction(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Content string `json:"content"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	rp, _, ok := s.lookup(w, r, docReactions)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	switch in.Content {
	case "+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes":
	default:
		writeValidation(w, docReactions, fieldError{Resource: "Reaction", Field: "content", Code: "invalid"})
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	c := rp.comment(id)
	if c == nil {
		writeError(w, http.StatusNotFound, "Not Found", docReactions)
		return
	}
	u := s.urlsFor(r)
	who := actor(r)
	for _, re := range c.Reactions {
		if re.User == who && re.Content == in.Content {
			writeJSON(w, http.StatusOK, reactionJSON(s, u, re))
			return
		}
	}
	re := Reaction{ID: s.id(), User: who, Content: in.Content}
	c.Reactions = append(c.Reactions, re)
	writeJSON(w, http.StatusCreated, reactionJSON(s, u, re))
}

func reactionJSON(s *Server, u urls, re Reaction) map[string]any {
	return map[string]any{"id": re.ID, "node_id": nodeID("REA", itoa(int(re.ID))), "user": s.user(u, re.User),
		"content": re.Content, "created_at": ts(s.now())}
}

// comment finds a conversation comment by id. Call with s.mu held.
func (r *repo) comment(id int64) *Comment {
	for _, cs := range r.comments {
		for _, c := range cs {
			if c.ID == id {
				return c
			}
		}
	}
	return nil
}

// Reactions returns the reactions on a conversation comment.
func (s *Server) Reactions(full string, commentID int64) []Reaction {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.mustRepo(full).comment(commentID)
	if c == nil {
		s.t.Fatalf("githubtest: no comment %d in %s", commentID, full)
	}
	return slices.Clone(c.Reactions)
}
