package agentrun

import "io"

// decodeStream runs d over all of r; it is how the fuzz tests, benchmarks
// and replay tests drive a decoder without a process.
func decodeStream(r io.Reader, d decoder) (*Result, bool, error) {
	lr := newLineReader(r, maxLineBytes, nil)
	err := eachLine(lr, d.line, d.tooLong)
	res := &Result{ExitCode: 0}
	found := d.finish(res)
	return res, found, err
}
