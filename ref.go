package baton

// RefRole says what a ref means to the work that carries it.
type RefRole string

const (
	RoleRequest RefRole = "request" // what started the work: an issue, a ticket
	RoleWork    RefRole = "work"    // where the work happens: a PR, a branch
	RoleParent  RefRole = "parent"  // the delivery this one belongs to
	RoleReview  RefRole = "review"  // a review verdict's comment
	RoleCheck   RefRole = "check"   // a failed CI check or verify run
)

// Ref is a typed pointer to context. Context accumulates as refs: prompts
// carry refs, not copies of what they point at.
type Ref struct {
	Role  RefRole `json:"role"`
	Type  string  `json:"type"` // github_issue, pr, branch, commit, check_run, review, ...
	Label string  `json:"label"`
	URL   string  `json:"url,omitempty"`
}

// RefReviewLine is the type of a review ref to one line note of a
// person's reject (LineNote): its Label is the note's path:line, so
// notes read at one URL (a review, a note file) are refs apart.
const RefReviewLine = "review_line"
