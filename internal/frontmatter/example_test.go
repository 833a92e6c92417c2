package frontmatter_test

import (
	"fmt"

	"github.com/baton-agent/baton/internal/frontmatter"
)

// DecodePacket reads a packet as a person or an agent wrote it; keys and
// sections baton does not know survive EncodePacket unchanged.
func ExampleDecodePacket() {
	src := []byte(`---
id: 20261122T093400Z-auth-refactor
created_at: 2026-11-22T09:34:00Z
updated_at: 2026-11-22T09:34:00Z
status: draft
purpose: finish the auth refactor
reviewer: sam
---

## Next Prompt

Run go test ./auth/... and fix the two expiry failures.

## Scratch

Kept as written.
`)
	p, err := frontmatter.DecodePacket(src)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.ID, p.Status)
	fmt.Printf("%q\n", p.SectionText("Next Prompt"))
	fmt.Println(string(frontmatter.EncodePacket(p)) == string(src))
	// Output:
	// 20261122T093400Z-auth-refactor draft
	// "Run go test ./auth/... and fix the two expiry failures."
	// true
}
