package mcp

import (
	"context"
	"fmt"
	"os"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/handoff"
	"github.com/baton-agent/baton/internal/prompt"
	"github.com/baton-agent/baton/internal/safefile"
)

// Resource URI prefixes; the id follows.
const (
	packetURI = "baton://packets/"
	loopURI   = "baton://loops/"
)

// maxResourceBytes bounds a resource read: a packet or loop file larger
// than this is not something baton wrote.
const maxResourceBytes = 8 << 20

func (s *Server) addResources() {
	s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: packetURI + "{id}", Name: "packet", MIMEType: "text/markdown",
		Description: "A handoff packet file, by id"}, s.readResource)
	s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: loopURI + "{id}", Name: "loop", MIMEType: "text/markdown",
		Description: "A loop file, by id"}, s.readResource)
}

// readResource returns a packet or loop file as stored. Ids must be exact
// and valid: a resource URI never reaches outside the store.
func (s *Server) readResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	st, err := s.readStore()
	if err != nil {
		return nil, err
	}
	var path string
	switch {
	case strings.HasPrefix(uri, packetURI) && baton.ValidID(strings.TrimPrefix(uri, packetURI)):
		path, err = st.PacketPath(strings.TrimPrefix(uri, packetURI))
	case strings.HasPrefix(uri, loopURI) && baton.ValidID(strings.TrimPrefix(uri, loopURI)):
		path, err = st.LoopPath(strings.TrimPrefix(uri, loopURI))
	default:
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	b, err := safefile.ReadFile(path, maxResourceBytes)
	if os.IsNotExist(err) || baton.ErrorCode(err) == baton.NotFound {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: string(b)}}}, nil
}

func (s *Server) addPrompts() {
	s.sdk.AddPrompt(&sdk.Prompt{Name: "pickup", Description: "Continue from a handoff packet",
		Arguments: []*sdk.PromptArgument{{Name: "packet", Description: "id, prefix or latest (default)"}}}, s.pickupPrompt)
	s.sdk.AddPrompt(&sdk.Prompt{Name: "handoff", Description: "Write a handoff packet for the next session",
		Arguments: []*sdk.PromptArgument{{Name: "purpose", Description: "what the next session should achieve"}}}, s.handoffPrompt)
	s.sdk.AddPrompt(&sdk.Prompt{Name: "review-pr", Description: "Review a GitHub pull request",
		Arguments: []*sdk.PromptArgument{{Name: "pr", Description: "number or URL", Required: true}}}, s.briefPrompt("review-pr"))
	s.sdk.AddPrompt(&sdk.Prompt{Name: "fix-issue", Description: "Fix a GitHub issue",
		Arguments: []*sdk.PromptArgument{{Name: "issue", Description: "number or URL", Required: true}}}, s.briefPrompt("fix-issue"))
	s.sdk.AddPrompt(&sdk.Prompt{Name: "implement-feature", Description: "Implement a feature from an issue or a request",
		Arguments: []*sdk.PromptArgument{{Name: "request", Description: "issue number, URL, or the request in words", Required: true}}}, s.briefPrompt("implement-feature"))
}

func userPrompt(desc, body string) *sdk.GetPromptResult {
	return &sdk.GetPromptResult{Description: desc, Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: body}}}}
}

func (s *Server) pickupPrompt(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	st, err := s.readStore()
	if err != nil {
		return nil, err
	}
	picked, err := handoff.Pickup(ctx, st, req.Params.Arguments["packet"], prompt.Options{BudgetBytes: prompt.DefaultBudgetBytes})
	if err != nil {
		if picked != nil && len(picked.Skipped) > 0 {
			return nil, fmt.Errorf("%w; %s", err, skippedNote(picked.Skipped))
		}
		return nil, err
	}
	desc := "Continue from packet " + picked.Packet.ID
	if len(picked.Skipped) > 0 {
		desc += " (" + skippedNote(picked.Skipped) + ")"
	}
	return userPrompt(desc, picked.Pack.Text), nil
}

// handoffPrompt asks the agent to write the packet through the handoff
// tool, from what only it knows: the session's decisions and state.
func (s *Server) handoffPrompt(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	purpose := strings.TrimSpace(req.Params.Arguments["purpose"])
	if purpose == "" {
		purpose = "(say in one line what the next session should achieve)"
	}
	body := fmt.Sprintf(`Write a handoff packet so a new session can continue this work without this conversation.

Purpose: %s

Call baton's handoff tool with that purpose and a body in markdown with these sections, each short and concrete:
## Intent: the goal and why.
## Context: what exists now, what was tried, what failed and why.
## Decisions: what was decided, with the reason.
## Plan: the next steps, in order.
## Open Questions: what is unresolved.
Give next_prompt (the first instruction for the next session), files (the paths that matter) and validators (commands that prove the work is done).
Do not invent facts; leave a section out rather than guess.`, purpose)
	return userPrompt("Write a handoff packet", body), nil
}

// briefPrompt renders a task brief as the prompt, as the slash commands
// of the same name do.
func (s *Server) briefPrompt(name string) sdk.PromptHandler {
	return func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		args := req.Params.Arguments
		var res *sdk.CallToolResult
		var err error
		switch name {
		case "review-pr":
			res, _, err = s.reviewPRBrief(ctx, nil, reviewIn{PR: args["pr"]})
		case "fix-issue":
			res, _, err = s.fixIssueBrief(ctx, nil, issueIn{Issue: args["issue"]})
		default:
			in := featureIn{Request: args["request"]}
			if _, _, ok := github.ParseNumber(in.Request, "issues"); ok {
				in.Issue, in.Request = in.Request, ""
			}
			res, _, err = s.implementFeatureBrief(ctx, nil, in)
		}
		if err != nil {
			return nil, err
		}
		return userPrompt(name, res.Content[0].(*sdk.TextContent).Text), nil
	}
}
