package gitx

import (
	"bytes"
	"context"
	"io"

	"github.com/baton-agent/baton/internal/reap"
)

// RunLimit runs git with args in the repo and returns at most limit
// bytes of its stdout; cut says there was more. git is stopped once the
// limit is read, so a diff or a file of any size costs at most limit
// bytes of memory. stderr is kept to 4 KiB for the error.
func (r *Repo) RunLimit(ctx context.Context, limit int64, args ...string) (out []byte, cut bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := r.command(ctx, args...)
	var errb limitedBuffer
	errb.max = 4 << 10
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, err
	}
	release, err := r.start(cmd)
	defer release()
	if err != nil {
		return nil, false, notFound(err)
	}
	var buf bytes.Buffer
	n, rerr := io.Copy(&buf, io.LimitReader(stdout, limit+1))
	if n > limit {
		cut = true
		buf.Truncate(int(limit))
		cancel() // the rest is not wanted
	}
	werr := reap.Wait(cmd)
	if cut {
		return buf.Bytes(), true, nil
	}
	if rerr != nil {
		return nil, false, rerr
	}
	if werr != nil {
		return buf.Bytes(), false, &Error{Args: args, Stderr: errb.String(), Err: werr}
	}
	return buf.Bytes(), false, nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// Stream runs git with args in the repo and hands its stdout to read,
// which may stop before the end: git is stopped then. stderr is kept to
// 4 KiB for the error. A git that fails after read returned nil is an
// error only when read took all of its output.
func (r *Repo) Stream(ctx context.Context, read func(io.Reader) error, args ...string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := r.command(ctx, args...)
	var errb limitedBuffer
	errb.max = 4 << 10
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	release, err := r.start(cmd)
	defer release()
	if err != nil {
		return notFound(err)
	}
	rerr := read(stdout)
	n, _ := io.Copy(io.Discard, io.LimitReader(stdout, 1))
	early := n > 0 // read stopped before the end: git is stopped, not failed
	if early || rerr != nil {
		cancel()
	}
	werr := reap.Wait(cmd)
	if rerr != nil {
		return rerr
	}
	if werr != nil && !early {
		return &Error{Args: args, Stderr: errb.String(), Err: werr}
	}
	return nil
}
