package queue

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/baton-agent/baton"
)

// Queues: agents' phases, and the short jobs a server works (notices,
// review notes to post, comment feedback, webhooks), apart so that neither waits behind the
// other.
const (
	// QueueName is the River queue phase jobs run on.
	QueueName = "phases"
	// ServerQueue is the River queue of notices, reviews, feedback and
	// webhooks, which only `baton serve` works: it holds the notification
	// targets, GitHub intake and the forges reviews are posted to.
	ServerQueue = "server"
)

// Args are a job's arguments: RunPhaseArgs, MessageArgs, NoticeArgs,
// ReviewArgs, FeedbackArgs or WebhookArgs. Every kind is unique by its arguments, so a job queued
// twice (a replayed change, two servers seeing one comment) is one job.
type Args interface {
	river.JobArgs
	river.JobArgsWithInsertOpts
	jobArgs()
}

// RunPhaseArgs asks a worker to run the pending phase of a delivery.
type RunPhaseArgs struct {
	DeliveryID string      `json:"delivery_id"`
	Phase      baton.Phase `json:"phase"`
	// Entry is the delivery's version when the phase was entered: jobs
	// are unique per delivery, phase and entry, so a replayed transition
	// cannot queue a second job, while a later return to the same phase
	// (implement after a not_pass review) gets its own.
	Entry int64 `json:"entry"`
}

// Kind implements river.JobArgs.
func (RunPhaseArgs) Kind() string { return "baton.run_phase" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (RunPhaseArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

func (RunPhaseArgs) jobArgs() {}

// MessageArgs asks a worker to see a person's message to a running agent
// (sqlstore's messages row) through: the runner of its phase gives it to
// the agent; the job records what became of a message whose run ended
// without it, so no message waits forever, whatever process dies.
type MessageArgs struct {
	ID int64 `json:"message_id"`
}

// Kind implements river.JobArgs.
func (MessageArgs) Kind() string { return "baton.message" }

// InsertOpts implements river.JobArgsWithInsertOpts: it runs on the
// phases' queue, where the runners are.
func (MessageArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueName, MaxAttempts: 20, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

func (MessageArgs) jobArgs() {}

// NoticeArgs asks a server to send a stored notification (sqlstore) to
// the targets that did not take it yet.
type NoticeArgs struct {
	ID int64 `json:"notification_id"`
}

// Kind implements river.JobArgs.
func (NoticeArgs) Kind() string { return "baton.notice" }

// InsertOpts implements river.JobArgsWithInsertOpts: eight attempts,
// with River's backoff, span about an hour and a quarter.
func (NoticeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: ServerQueue, MaxAttempts: 8, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

func (NoticeArgs) jobArgs() {}

// FeedbackArgs asks a server to act on a comment or review that asked
// baton for something (the feedback table's row with this key).
type FeedbackArgs struct {
	Repo string `json:"repo"`
	// CommentKind is issue_comment or review; CommentID is GitHub's id.
	CommentKind string `json:"kind"`
	CommentID   int64  `json:"comment_id"`
}

// Kind implements river.JobArgs.
func (FeedbackArgs) Kind() string { return "baton.feedback" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (FeedbackArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: ServerQueue, MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

func (FeedbackArgs) jobArgs() {}

// WebhookArgs asks a server to handle a GitHub webhook it verified and
// recorded (webhook_deliveries, by GitHub's delivery id).
type WebhookArgs struct {
	ID string `json:"webhook_delivery"`
}

// Kind implements river.JobArgs.
func (WebhookArgs) Kind() string { return "baton.webhook" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (WebhookArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: ServerQueue, MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

func (WebhookArgs) jobArgs() {}

// ReviewArgs asks a server to publish a stored review note (sqlstore's
// review_notes row: a person's reject reason with its line notes, or a
// reviewer agent's verdict) on the delivery's forge, and to add where it
// was posted to the delivery's refs. It is queued in the transaction of
// the decision the note belongs to, so a decision that loses posts
// nothing, and one that commits posts once, whatever process dies.
type ReviewArgs struct {
	DeliveryID string `json:"delivery_id"`
	NoteID     int64  `json:"note_id"`
}

// Kind implements river.JobArgs.
func (ReviewArgs) Kind() string { return "baton.review" }

// InsertOpts implements river.JobArgsWithInsertOpts: eight attempts,
// with River's backoff, span about an hour and a quarter.
func (ReviewArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: ServerQueue, MaxAttempts: 8, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

func (ReviewArgs) jobArgs() {}

// Job is what a handler knows of the job it works.
type Job struct {
	ID int64
	// Attempt counts River's attempts from 1.
	Attempt     int
	MaxAttempts int
}

// Last reports whether a failure now ends the job: River retries it no
// more, so the handler says what became of its work.
func (j Job) Last() bool { return j.Attempt >= j.MaxAttempts }

// Handlers work the jobs of each kind. A process works the queues it was
// opened for (Config): phases need Phase; the server queue needs Notice,
// Review, Feedback and Webhook.
type Handlers struct {
	Phase    func(context.Context, RunPhaseArgs, Job) error
	Message  func(context.Context, MessageArgs, Job) error
	Notice   func(context.Context, NoticeArgs, Job) error
	Review   func(context.Context, ReviewArgs, Job) error
	Feedback func(context.Context, FeedbackArgs, Job) error
	Webhook  func(context.Context, WebhookArgs, Job) error
}

// maxServerJob bounds a notice, feedback or webhook job: a few requests
// to GitHub or a notice's targets (each bounded itself) and database
// writes. A job is rescued only once it cannot still be running
// (serverJobTimeout).
const maxServerJob = time.Minute
