// Package budget reads a prompt budget as a person or an agent gives it,
// and counts tokens for one with the o200k_base tokenizer. It is apart
// from package prompt because the tokenizer carries its ranks in the
// binary: a hook, which renders prompts but never counts tokens, does not
// link them.
package budget

import (
	"fmt"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/prompt"
)

// O200k counts tokens with the o200k_base encoding (GPT-4o and later),
// loaded from ranks embedded in the binary: no network, ever.
type O200k struct{ enc *tiktoken.Tiktoken }

// The tokenizer library keeps its loader in a package variable; set it
// once, before the first encoding is built.
var setLoader sync.Once

// NewO200k loads the encoding. Loading parses about 200 000 ranks, so
// build one counter per process and only when a token budget is asked for.
func NewO200k() (*O200k, error) {
	setLoader.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
	enc, err := tiktoken.GetEncoding("o200k_base")
	if err != nil {
		return nil, fmt.Errorf("load o200k_base tokenizer: %w", err)
	}
	return &O200k{enc: enc}, nil
}

// Count returns the number of o200k_base tokens in text.
func (o *O200k) Count(text string) int { return len(o.enc.Encode(text, nil, nil)) }

// Unit is "tokens".
func (o *O200k) Unit() string { return "tokens" }

// Parse is the one rule for a prompt budget as a person (a flag)
// or an agent (a tool argument) gives it: bytes is the size limit, 0 for
// the caller's default (prompt.DefaultBudgetBytes for a packet, a brief's own);
// tokens, when above 0, also limits the prompt to that many o200k_base
// tokens, and only then is the tokenizer loaded. A negative number is an
// Invalid error.
func Parse(bytes, tokens int) (prompt.Options, error) {
	if bytes < 0 {
		return prompt.Options{}, baton.Errorf(baton.Invalid, "a byte budget of %d: give a positive number of bytes, or 0 for the default", bytes)
	}
	if tokens < 0 {
		return prompt.Options{}, baton.Errorf(baton.Invalid, "a token budget of %d: give a positive number of tokens, or 0 for none", tokens)
	}
	opts := prompt.Options{BudgetBytes: bytes, BudgetTokens: tokens}
	if tokens > 0 {
		enc, err := NewO200k()
		if err != nil {
			return prompt.Options{}, err
		}
		opts.Tokens = enc
	}
	return opts, nil
}
