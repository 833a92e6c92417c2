package baton

import "time"

// Harness names an agent product baton integrates with. What baton
// knows of each is in internal/harness's table.
type Harness string

const (
	HarnessClaude Harness = "claude"
	HarnessCodex  Harness = "codex"
	HarnessDroid  Harness = "droid"
	HarnessPi     Harness = "pi"
)

// FileSource says who named a relevant file.
type FileSource string

const (
	FromTool FileSource = "tool" // an agent's file-changing tool touched it
	FromUser FileSource = "user" // a person or a packet confirmed it
)

// RelevantFile is one line of indexes/relevant-files.jsonl. FilePath is
// relative to the project root, with forward slashes.
type RelevantFile struct {
	Timestamp  time.Time  `json:"timestamp"`
	FilePath   string     `json:"file_path"`
	Source     FileSource `json:"source"`
	PacketID   string     `json:"packet_id,omitempty"`
	Confidence float64    `json:"confidence"`
}

// SessionRecord is one line of indexes/sessions.jsonl: a harness session
// that started (or resumed, or compacted) in this project.
type SessionRecord struct {
	SessionID      string    `json:"session_id"`
	Harness        Harness   `json:"harness"`
	Source         string    `json:"source,omitempty"` // startup, resume, clear, compact, fork
	CWD            string    `json:"cwd,omitempty"`
	TranscriptPath string    `json:"transcript_path,omitempty"`
	At             time.Time `json:"at"`
}

// Root is the project-local store's marker, .agent/context/root.json.
type Root struct {
	ProjectID string    `json:"project_id"`
	CreatedAt time.Time `json:"created_at"`
	Version   int       `json:"version"`
}

// StoreVersion is the on-disk layout version baton writes in root.json.
const StoreVersion = 1
