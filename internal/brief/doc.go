// Package brief renders task briefs: the deterministic context one task
// type always needs (review-pr, fix-issue, implement-feature), fetched all
// or nothing and rendered as a prompt pack with a Definition of Done and
// the OODA framing (seed 003).
//
// A brief is built in two steps. Fetch (FetchReview, FetchIssue) reads
// everything from GitHub into a value and fails as a whole: a brief never
// carries half its context. Build renders that value under a budget; it
// makes no requests and is deterministic, so it is golden-tested.
//
// Diffs are streamed, never held in memory: IndexDiff records where each
// file and its first hunk begin while copying the bytes to a Spool, and
// ExcerptDiff cuts the diff to its byte budget fairly across files, at
// line boundaries.
package brief
