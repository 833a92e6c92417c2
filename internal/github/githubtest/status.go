package githubtest

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	docStatuses  = "https://docs.github.com/rest/commits/statuses#create-a-commit-status"
	docCheckRuns = "https://docs.github.com/rest/checks/runs"
)

// createStatus answers POST /repos/{owner}/{repo}/statuses/{sha}: any
// token that may write posts one; the SHA must be a commit the
// repository has.
func (s *Server) createStatus(w http.ResponseWriter, r *http.Request) {
	var in struct {
		State       string  `json:"state"`
		TargetURL   *string `json:"target_url"`
		Description *string `json:"description"`
		Context     string  `json:"context"`
	}
	if !decodeBody(w, r, &in) {
		return
	}
	rp, _, ok := s.lookup(w, r, docStatuses)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	sha, ok := rp.resolve(r.PathValue("sha"))
	if !ok || len(r.PathValue("sha")) != 40 {
		writeValidation(w, docStatuses, fieldError{Resource: "Status", Code: "custom", Message: "No commit found for SHA: " + r.PathValue("sha")})
		return
	}
	switch in.State {
	case "error", "failure", "pending", "success":
	default:
		writeValidation(w, docStatuses, fieldError{Resource: "Status", Field: "state", Code: "invalid"})
		return
	}
	st := &Status{ID: s.id(), SHA: sha, State: in.State, Context: cmpOr(in.Context, "default"), Creator: actor(r), CreatedAt: s.now()}
	if in.TargetURL != nil {
		st.TargetURL = *in.TargetURL
	}
	if in.Description != nil {
		// GitHub keeps at most 140 characters of a description.
		st.Description = *in.Description
		if len([]rune(st.Description)) > 140 {
			writeValidation(w, docStatuses, fieldError{Resource: "Status", Field: "description", Code: "custom", Message: "description is too long (maximum is 140 characters)"})
			return
		}
	}
	rp.statuses = append(rp.statuses, st)
	writeJSON(w, http.StatusCreated, s.statusJSON(s.urlsFor(r), rp, st))
}

// checkRunInput is the body of creating or updating a check run.
type checkRunInput struct {
	Name        *string `json:"name"`
	HeadSHA     string  `json:"head_sha"`
	DetailsURL  *string `json:"details_url"`
	ExternalID  *string `json:"external_id"`
	Status      *string `json:"status"`
	Conclusion  *string `json:"conclusion"`
	StartedAt   *string `json:"started_at"`
	CompletedAt *string `json:"completed_at"`
	Output      *struct {
		Title   *string `json:"title"`
		Summary *string `json:"summary"`
		Text    *string `json:"text"`
	} `json:"output"`
}

// apply sets the input on cr, as GitHub does: a conclusion completes the
// run. It returns a message for a run GitHub would refuse.
func (in checkRunInput) apply(cr *CheckRun, now time.Time) string {
	if in.Name != nil {
		cr.Name = *in.Name
	}
	if in.DetailsURL != nil {
		cr.DetailsURL = *in.DetailsURL
	}
	if in.Status != nil {
		cr.Status = *in.Status
	}
	if in.Conclusion != nil {
		cr.Conclusion, cr.Status = *in.Conclusion, "completed"
	}
	if o := in.Output; o != nil {
		if o.Title == nil || o.Summary == nil {
			return "output needs a title and a summary"
		}
		cr.Title, cr.Summary = *o.Title, *o.Summary
		if len(cr.Summary) > 65535 {
			return "output.summary is too long (maximum is 65535 characters)"
		}
	}
	switch cr.Status {
	case "queued", "in_progress":
		if cr.Conclusion != "" {
			return "conclusion is only valid when completed"
		}
	case "completed":
		switch cr.Conclusion {
		case "success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required":
		default:
			return "conclusion is required when status is completed"
		}
		if cr.CompletedAt.IsZero() {
			cr.CompletedAt = now
		}
	default:
		return "status is not included in the list"
	}
	if cr.Name == "" {
		return "name is required"
	}
	return ""
}

// appOnly answers the 403 GitHub gives a token that is not an App
// installation's on the check runs API. It reports whether it did.
func appOnly(w http.ResponseWriter, r *http.Request) bool {
	if identityOf(r).install == nil {
		writeError(w, http.StatusForbidden, "You must authenticate via a GitHub App.", docCheckRuns+"#create-a-check-run")
		return true
	}
	return false
}

// createCheckRun answers POST /repos/{owner}/{repo}/check-runs, for App
// installations only.
func (s *Server) createCheckRun(w http.ResponseWriter, r *http.Request) {
	var in checkRunInput
	if !decodeBody(w, r, &in) || appOnly(w, r) {
		return
	}
	rp, _, ok := s.lookup(w, r, docCheckRuns)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	sha, ok := rp.resolve(in.HeadSHA)
	if !ok || len(in.HeadSHA) != 40 {
		writeValidation(w, docCheckRuns, fieldError{Resource: "CheckRun", Field: "head_sha", Code: "invalid"})
		return
	}
	cr := &CheckRun{ID: s.id(), HeadSHA: sha, Status: "queued", App: strings.TrimSuffix(actor(r), "[bot]"), StartedAt: s.now()}
	if msg := in.apply(cr, s.now()); msg != "" {
		writeValidation(w, docCheckRuns, fieldError{Resource: "CheckRun", Code: "custom", Message: msg})
		return
	}
	rp.checkRuns = append(rp.checkRuns, cr)
	writeJSON(w, http.StatusCreated, s.checkRunJSON(s.urlsFor(r), rp, cr))
}

// updateCheckRun answers PATCH /repos/{owner}/{repo}/check-runs/{id}:
// only the App that made a run may change it.
func (s *Server) updateCheckRun(w http.ResponseWriter, r *http.Request) {
	var in checkRunInput
	if !decodeBody(w, r, &in) || appOnly(w, r) {
		return
	}
	rp, _, ok := s.lookup(w, r, docCheckRuns)
	if !ok {
		return
	}
	defer s.mu.Unlock()
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	for _, cr := range rp.checkRuns {
		if cr.ID != id {
			continue
		}
		if cr.App != strings.TrimSuffix(actor(r), "[bot]") {
			writeError(w, http.StatusForbidden, "Invalid app_id `"+strconv.FormatInt(s.userID(actor(r)), 10)+"` - check run can only be modified by the GitHub App that created it.", docCheckRuns+"#update-a-check-run")
			return
		}
		next := *cr
		if msg := in.apply(&next, s.now()); msg != "" {
			writeValidation(w, docCheckRuns, fieldError{Resource: "CheckRun", Code: "custom", Message: msg})
			return
		}
		*cr = next
		writeJSON(w, http.StatusOK, s.checkRunJSON(s.urlsFor(r), rp, cr))
		return
	}
	writeError(w, http.StatusNotFound, "Not Found", docCheckRuns+"#update-a-check-run")
}
