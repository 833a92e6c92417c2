// Package integrations holds baton's non-Go assets for agent products:
// slash-command templates (commands/*.md, rendered per harness by
// internal/install) and the pi extension (pi/index.ts).
package integrations

import "embed"

// Commands holds the slash-command templates, one per command name.
//
//go:embed commands/*.md
var Commands embed.FS

// PiExtension is the pi extension's source.
//
//go:embed pi/index.ts
var PiExtension string
