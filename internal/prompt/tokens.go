package prompt

import (
	"fmt"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
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

// NewOptions returns the options for a pack of at most bytes bytes (0:
// the caller's default, as a brief keeps its own) and, when tokens > 0, at
// most tokens o200k_base tokens. The tokenizer is loaded only then. Edges
// check the numbers first, in their own argument names.
func NewOptions(bytes, tokens int) (Options, error) {
	opts := Options{BudgetBytes: bytes, BudgetTokens: tokens}
	if tokens > 0 {
		enc, err := NewO200k()
		if err != nil {
			return Options{}, err
		}
		opts.Tokens = enc
	}
	return opts, nil
}
