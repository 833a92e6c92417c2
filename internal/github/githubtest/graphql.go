package githubtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The GraphQL root fields the server understands, in the order they are
// looked for in a query.
var graphQLFields = []string{
	"markPullRequestReadyForReview",
	"closedByPullRequestsReferences",
	"closingIssuesReferences",
}

type gqlError struct {
	Type      string        `json:"type,omitempty"`
	Code      string        `json:"code,omitempty"`
	Path      []any         `json:"path,omitempty"`
	Locations []gqlLocation `json:"locations,omitempty"`
	Message   string        `json:"message"`
}

type gqlLocation struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// graphQLField names the operation a GraphQL body asks for, or "unknown".
func graphQLField(body []byte) string {
	var req struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(body, &req) != nil {
		return "unknown"
	}
	return queryField(req.Query)
}

// queryField finds the first known root field in a GraphQL document.
func queryField(query string) string {
	for _, f := range graphQLFields {
		if strings.Contains(query, f) {
			return f
		}
	}
	return "unknown"
}

type gqlRequest struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables"`
}

func (s *Server) graphql(w http.ResponseWriter, r *http.Request) {
	var req gqlRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Query == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{
			"message": "Problems parsing JSON", "documentation_url": docGraphQL,
		})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.urlsFor(r)
	switch queryField(req.Query) {
	case "markPullRequestReadyForReview":
		s.gqlMarkReady(w, req)
	case "closedByPullRequestsReferences":
		s.gqlConnection(w, u, req, "issue")
	case "closingIssuesReferences":
		s.gqlConnection(w, u, req, "pullRequest")
	default:
		writeJSON(w, http.StatusOK, map[string]any{"errors": []gqlError{{
			Message:   "githubtest: unsupported GraphQL query (the fake answers closingIssuesReferences, closedByPullRequestsReferences and markPullRequestReadyForReview)",
			Locations: []gqlLocation{{1, 1}},
		}}})
	}
}

// intVar reads a numeric variable (JSON numbers decode as float64).
func intVar(vars map[string]any, name string, def int) (int, bool) {
	v, ok := vars[name]
	if !ok || v == nil {
		return def, def != 0
	}
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

func strVar(vars map[string]any, name string) string {
	s, _ := vars[name].(string)
	return s
}

func cursor(i int) string {
	return base64.StdEncoding.EncodeToString([]byte("cursor:v2:" + strconv.Itoa(i)))
}

func decodeCursor(c string) (int, bool) {
	b, err := base64.StdEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(string(b), "cursor:v2:"))
	return n, err == nil
}

// gqlConnection answers closingIssuesReferences (parent "pullRequest") and
// closedByPullRequestsReferences (parent "issue") with cursor pagination.
// Call with s.mu held.
func (s *Server) gqlConnection(w http.ResponseWriter, u urls, req gqlRequest, parent string) {
	v := req.Variables
	owner, name := strVar(v, "owner"), strVar(v, "name")
	number, okN := intVar(v, "number", 0)
	first, okF := intVar(v, "first", 0)
	if !okN || !okF || owner == "" || name == "" {
		writeJSON(w, http.StatusOK, map[string]any{"errors": []gqlError{{
			Type: "INVALID_VARIABLES", Message: "githubtest: want variables $owner, $name, $number and $first",
		}}})
		return
	}
	if first < 1 || first > 100 {
		writeJSON(w, http.StatusOK, map[string]any{"errors": []gqlError{{
			Path:    []any{"repository", parent, "first"},
			Message: fmt.Sprintf("Requesting %d records on the connection exceeds the `first` limit of 100 records.", first),
		}}})
		return
	}
	rp := s.repoLocked(owner+"/"+name, false)
	if rp == nil {
		writeJSON(w, http.StatusOK, map[string]any{
			"data": map[string]any{"repository": nil},
			"errors": []gqlError{{Type: "NOT_FOUND", Path: []any{"repository"}, Locations: []gqlLocation{{2, 3}},
				Message: fmt.Sprintf("Could not resolve to a Repository with the name '%s/%s'.", owner, name)}},
		})
		return
	}
	var nodes []map[string]any
	switch parent {
	case "pullRequest":
		p, ok := rp.pulls[number]
		if !ok {
			gqlNotFound(w, parent, "a PullRequest", number)
			return
		}
		for _, n := range p.ClosingIssues {
			if is, ok := rp.issues[n]; ok {
				nodes = append(nodes, map[string]any{
					"number": n, "title": is.Title, "url": fmt.Sprintf("%s/issues/%d", u.repoWeb(rp), n),
					"state": strings.ToUpper(is.State), "repository": map[string]any{"nameWithOwner": rp.fullName()},
				})
			}
		}
	case "issue":
		if _, ok := rp.issues[number]; !ok {
			// GitHub's issue(number:) does not resolve pull requests.
			gqlNotFound(w, parent, "an Issue", number)
			return
		}
		includeClosed := strings.Contains(strings.ReplaceAll(req.Query, " ", ""), "includeClosedPrs:true")
		for _, pn := range sortedKeys(rp.pulls) {
			p := rp.pulls[pn]
			if !containsInt(p.ClosingIssues, number) || (!includeClosed && p.State != "open") {
				continue
			}
			state := strings.ToUpper(p.State)
			if p.Merged {
				state = "MERGED"
			}
			nodes = append(nodes, map[string]any{
				"number": pn, "title": p.Title, "url": fmt.Sprintf("%s/pull/%d", u.repoWeb(rp), pn),
				"state": state, "isDraft": p.Draft, "repository": map[string]any{"nameWithOwner": rp.fullName()},
			})
		}
	}
	start := 0
	if after := strVar(v, "after"); after != "" {
		i, ok := decodeCursor(after)
		if !ok {
			writeJSON(w, http.StatusOK, map[string]any{"errors": []gqlError{{
				Message: fmt.Sprintf("`%s` does not appear to be a valid cursor.", after),
			}}})
			return
		}
		start = i + 1
	}
	end := min(start+first, len(nodes))
	pageNodes := []map[string]any{}
	if start < len(nodes) {
		pageNodes = nodes[start:end]
	}
	var endCursor any
	if len(pageNodes) > 0 {
		endCursor = cursor(end - 1)
	}
	field := "closingIssuesReferences"
	if parent == "issue" {
		field = "closedByPullRequestsReferences"
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{
		"repository": map[string]any{parent: map[string]any{field: map[string]any{
			"totalCount": len(nodes),
			"pageInfo":   map[string]any{"hasNextPage": end < len(nodes), "endCursor": endCursor},
			"nodes":      pageNodes,
		}}},
	}})
}

func gqlNotFound(w http.ResponseWriter, parent, kind string, number int) {
	writeJSON(w, http.StatusOK, map[string]any{
		"data": map[string]any{"repository": map[string]any{parent: nil}},
		"errors": []gqlError{{Type: "NOT_FOUND", Path: []any{"repository", parent}, Locations: []gqlLocation{{3, 5}},
			Message: fmt.Sprintf("Could not resolve to %s with the number of %d.", kind, number)}},
	})
}

// gqlMarkReady answers markPullRequestReadyForReview. Call with s.mu held.
func (s *Server) gqlMarkReady(w http.ResponseWriter, req gqlRequest) {
	id := strVar(req.Variables, "id")
	notFound := func() {
		writeJSON(w, http.StatusOK, map[string]any{
			"data": map[string]any{"markPullRequestReadyForReview": nil},
			"errors": []gqlError{{Type: "NOT_FOUND", Path: []any{"markPullRequestReadyForReview"}, Locations: []gqlLocation{{2, 3}},
				Message: fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id)}},
		})
	}
	kind, key, ok := decodeNodeID(id)
	if !ok || kind != "PR" {
		notFound()
		return
	}
	full, num, _ := strings.Cut(key, "#")
	n, err := strconv.Atoi(num)
	rp := s.repoLocked(full, false)
	if err != nil || rp == nil || rp.pulls[n] == nil {
		notFound()
		return
	}
	p := rp.pulls[n]
	if p.State != "open" {
		writeJSON(w, http.StatusOK, map[string]any{
			"data": map[string]any{"markPullRequestReadyForReview": nil},
			"errors": []gqlError{{Type: "UNPROCESSABLE", Path: []any{"markPullRequestReadyForReview"},
				Message: "Pull request is closed"}},
		})
		return
	}
	p.Draft = false
	p.UpdatedAt = s.now()
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{
		"markPullRequestReadyForReview": map[string]any{"pullRequest": map[string]any{"isDraft": false}},
	}})
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
