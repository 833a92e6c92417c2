package cli

import (
	"time"

	"github.com/baton-agent/baton/internal/brief"
	"github.com/baton-agent/baton/internal/prompt"
)

// The --json documents of the briefs: the prompt, the pack's report and the
// facts it was built from, so a script can check what an agent was shown.

type prJSON struct {
	Number       int       `json:"number"`
	Title        string    `json:"title"`
	Body         string    `json:"body"`
	State        string    `json:"state"`
	Draft        bool      `json:"draft"`
	Merged       bool      `json:"merged"`
	Author       string    `json:"author"`
	URL          string    `json:"url"`
	HeadRef      string    `json:"head_ref"`
	HeadSHA      string    `json:"head_sha"`
	BaseRef      string    `json:"base_ref"`
	BaseSHA      string    `json:"base_sha"`
	Additions    int       `json:"additions"`
	Deletions    int       `json:"deletions"`
	ChangedFiles int       `json:"changed_files"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

type fileJSON struct {
	Path         string `json:"path"`
	PreviousPath string `json:"previous_path,omitempty"`
	Status       string `json:"status"`
	Additions    int    `json:"additions"`
	Deletions    int    `json:"deletions"`
}

type linkJSON struct {
	Repo   string `json:"repo"`
	Number int    `json:"number"`
	Title  string `json:"title"`
	URL    string `json:"url"`
	State  string `json:"state"`
	Draft  bool   `json:"draft,omitempty"`
}

type reviewDoc struct {
	SchemaVersion int              `json:"schema_version"`
	Brief         string           `json:"brief"`
	Repo          string           `json:"repo"`
	Number        int              `json:"number"`
	Prompt        string           `json:"prompt"`
	Report        prompt.Report    `json:"report"`
	Diff          brief.DiffReport `json:"diff"`
	PullRequest   prJSON           `json:"pull_request"`
	Files         []fileJSON       `json:"files"`
	LinkedIssues  []linkJSON       `json:"linked_issues"`
}

func reviewJSON(b *brief.ReviewBrief) reviewDoc {
	repo, rv := b.Repo, b.Context
	pr := rv.PR
	d := reviewDoc{
		SchemaVersion: 1, Brief: "review-pr", Repo: repo.String(), Number: pr.Number,
		Prompt: b.Pack.Text, Report: b.Pack.Report, Diff: b.Diff,
		PullRequest: prJSON{
			Number: pr.Number, Title: pr.Title, Body: pr.Body, State: pr.State, Draft: pr.Draft, Merged: pr.Merged,
			Author: pr.Author, URL: pr.URL, HeadRef: pr.Head.Ref, HeadSHA: pr.Head.SHA, BaseRef: pr.Base.Ref, BaseSHA: pr.Base.SHA,
			Additions: pr.Additions, Deletions: pr.Deletions, ChangedFiles: pr.ChangedFiles,
			CreatedAt: pr.CreatedAt, UpdatedAt: pr.UpdatedAt,
		},
		Files:        make([]fileJSON, 0, len(rv.Files)),
		LinkedIssues: make([]linkJSON, 0, len(rv.LinkedIssues)),
	}
	for _, f := range rv.Files {
		d.Files = append(d.Files, fileJSON{f.Path, f.PreviousPath, f.Status, f.Additions, f.Deletions})
	}
	for _, is := range rv.LinkedIssues {
		d.LinkedIssues = append(d.LinkedIssues, linkJSON{Repo: is.Repo.String(), Number: is.Number, Title: is.Title, URL: is.URL, State: is.State})
	}
	return d
}

type commentJSON struct {
	Author    string    `json:"author"`
	Body      string    `json:"body"`
	URL       string    `json:"url"`
	CreatedAt time.Time `json:"created_at"`
}

type issueJSONFacts struct {
	Number       int           `json:"number"`
	Title        string        `json:"title"`
	Body         string        `json:"body"`
	State        string        `json:"state"`
	StateReason  string        `json:"state_reason,omitempty"`
	Author       string        `json:"author"`
	Labels       []string      `json:"labels"`
	URL          string        `json:"url"`
	CommentCount int           `json:"comment_count"`
	Comments     []commentJSON `json:"comments"`
}

type issueDoc struct {
	SchemaVersion int                  `json:"schema_version"`
	Brief         string               `json:"brief"`
	Repo          string               `json:"repo,omitempty"`
	Number        int                  `json:"number,omitempty"`
	Request       string               `json:"request,omitempty"`
	Prompt        string               `json:"prompt"`
	Report        prompt.Report        `json:"report"`
	CommentsShown int                  `json:"comments_shown"`
	Issue         *issueJSONFacts      `json:"issue,omitempty"`
	LinkedPRs     *[]linkJSON          `json:"linked_pull_requests,omitempty"`
	RelevantFiles []brief.RelevantFile `json:"relevant_files"`
}

func issueJSON(b *brief.IssueBrief) issueDoc {
	in := b.Input
	d := issueDoc{
		SchemaVersion: 1, Brief: string(in.Task), Request: in.Request, Prompt: b.Pack.Text, Report: b.Pack.Report,
		CommentsShown: b.CommentsShown, RelevantFiles: in.RelevantFiles,
	}
	if d.RelevantFiles == nil {
		d.RelevantFiles = []brief.RelevantFile{}
	}
	if in.Issue == nil {
		return d
	}
	is := in.Issue.Issue
	d.Repo, d.Number = b.Repo.String(), is.Number
	d.Issue = &issueJSONFacts{
		Number: is.Number, Title: is.Title, Body: is.Body, State: is.State, StateReason: is.StateReason,
		Author: is.Author, Labels: is.Labels, URL: is.URL, CommentCount: is.CommentCount, Comments: []commentJSON{},
	}
	if d.Issue.Labels == nil {
		d.Issue.Labels = []string{}
	}
	for _, c := range is.Comments {
		d.Issue.Comments = append(d.Issue.Comments, commentJSON{c.Author, c.Body, c.URL, c.CreatedAt})
	}
	links := make([]linkJSON, 0, len(in.Issue.LinkedPRs))
	for _, pr := range in.Issue.LinkedPRs {
		links = append(links, linkJSON{Repo: pr.Repo.String(), Number: pr.Number, Title: pr.Title, URL: pr.URL, State: pr.State, Draft: pr.Draft})
	}
	d.LinkedPRs = &links
	return d
}
