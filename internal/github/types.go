package github

import "time"

// User is a GitHub account.
type User struct {
	Login string // "" for a GitHub App whose bot is not known
	Name  string // display name; may be empty
	URL   string // profile page (html_url)
	// App is set when the token is a GitHub App installation's: it acts
	// as the App's bot, not as a person.
	App bool
}

// String names the account for a person: its login, "GitHub App" for an
// App whose bot is not known, "<bot> (GitHub App)" otherwise.
func (u *User) String() string {
	switch {
	case u.App && u.Login == "":
		return "GitHub App"
	case u.App:
		return u.Login + " (GitHub App)"
	}
	return u.Login
}

// Branch is one end of a pull request.
type Branch struct {
	Ref  string // branch name, "feature-x"
	SHA  string // commit the branch pointed at when the pull request was read
	Repo Repo   // repository holding the branch: a fork's for a fork's head
}

// PullRequest is a pull request's metadata, without files or diff.
type PullRequest struct {
	Repo   Repo
	Number int
	// NodeID is the GraphQL global id (node_id).
	NodeID string
	Title  string
	Body   string
	State  string // "open" or "closed"; a merged pull request is closed with Merged set
	Draft  bool
	Merged bool
	// Mergeable is nil while GitHub is still computing it.
	Mergeable *bool
	// MergeableState is GitHub's mergeable_state: clean, dirty, blocked,
	// behind, unstable, draft or unknown.
	MergeableState string
	Author         string // login
	URL            string // web page (html_url)
	Head           Branch
	Base           Branch
	// Totals over the whole pull request. ChangedFiles may exceed what
	// PullRequestFiles returns: GitHub lists at most 3,000 files.
	Additions      int
	Deletions      int
	ChangedFiles   int
	Commits        int
	Comments       int // conversation comments
	ReviewComments int // inline review comments
	Labels         []string
	MergeCommitSHA string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	MergedAt       time.Time // zero unless merged
	ClosedAt       time.Time // zero unless closed
}

// File is one changed file of a pull request.
type File struct {
	Path         string // filename
	PreviousPath string // for renames
	// Status is added, removed, modified, renamed, copied, changed or
	// unchanged.
	Status    string
	Additions int
	Deletions int
	Changes   int
	// Patch is the file's unified-diff hunks. GitHub omits it for binary
	// files and for very large changes.
	Patch string
}

// Issue is an issue's metadata and, when asked for, its most recent
// comments.
type Issue struct {
	Repo        Repo
	Number      int
	Title       string
	Body        string
	State       string // "open" or "closed"
	StateReason string // completed, not_planned, reopened, or ""
	Author      string
	Labels      []string
	URL         string
	// IsPullRequest is set when the number names a pull request: GitHub's
	// issue endpoints serve pull requests too.
	IsPullRequest bool
	// CommentCount is the total number of conversation comments.
	CommentCount int
	// Comments holds the most recent comments asked for, oldest first.
	Comments  []Comment
	CreatedAt time.Time
	UpdatedAt time.Time
	ClosedAt  time.Time
}

// Comment is a conversation comment on an issue or pull request.
type Comment struct {
	ID int64
	// Number is the issue or pull request it is on, when listed across a
	// repository (RepoComments); 0 otherwise.
	Number    int
	Author    string
	Body      string
	URL       string // html_url: .../issues/N#issuecomment-ID or .../pull/N#issuecomment-ID
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ReviewComment is an inline comment on a pull request's diff.
type ReviewComment struct {
	ID       int64
	ReviewID int64
	// InReplyTo is the id of the comment this one answers, 0 for a thread's
	// first comment.
	InReplyTo int64
	Author    string
	Body      string
	Path      string
	// Line is the line in the file the comment is on (the last line of a
	// multi-line comment); 0 when the comment is outdated and no longer
	// maps to the current diff.
	Line      int
	StartLine int    // first line of a multi-line comment, else 0
	Side      string // LEFT (deletions) or RIGHT (additions and context)
	CommitID  string
	DiffHunk  string
	URL       string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Review is a pull request review.
type Review struct {
	ID          int64
	Author      string
	Body        string
	State       string // APPROVED, CHANGES_REQUESTED, COMMENTED, PENDING, DISMISSED
	CommitID    string
	URL         string // .../pull/N#pullrequestreview-ID
	SubmittedAt time.Time
}

// LinkedIssue is an issue a pull request will close when merged
// (closingIssuesReferences): the PR body or the sidebar links it with a
// closing keyword.
type LinkedIssue struct {
	Repo   Repo
	Number int
	Title  string
	URL    string
	State  string // "open" or "closed"
}

// LinkedPullRequest is a pull request that will close an issue when merged
// (closedByPullRequestsReferences).
type LinkedPullRequest struct {
	Repo   Repo
	Number int
	Title  string
	URL    string
	State  string // "open", "closed" or "merged"
	Draft  bool
}

// MergeResult is GitHub's answer to a merge.
type MergeResult struct {
	SHA     string // the merge, squash or rebase commit on the base branch
	Merged  bool
	Message string
}
