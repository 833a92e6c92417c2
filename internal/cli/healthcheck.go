package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/baton-agent/baton"
)

func newHealthcheckCmd(f *Factory) *cobra.Command {
	var addr string
	var ready bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when a baton serve answers its health (or readiness) check",
		Long: `Ask a running baton serve for /healthz (the process answers) or, with
--ready, /readyz (it can reach its database), and exit 0 when it says
yes, 1 otherwise. It is the probe of container images that have no
shell or curl: HEALTHCHECK CMD ["baton", "healthcheck", "--ready"].`,
		Example: "  baton healthcheck\n  baton healthcheck --ready --addr 127.0.0.1:7070",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHealthcheck(cmd.Context(), f, addr, ready, timeout)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&addr, "addr", "127.0.0.1:7070", "the address baton serve listens on (host:port)")
	fl.BoolVar(&ready, "ready", false, "check readiness (/readyz) instead of liveness (/healthz)")
	fl.DurationVar(&timeout, "timeout", 5*time.Second, "give up after this long")
	return cmd
}

func runHealthcheck(ctx context.Context, f *Factory, addr string, ready bool, timeout time.Duration) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return usageError("--addr %q: want host:port, e.g. 127.0.0.1:7070", addr)
	}
	path := "/healthz"
	if ready {
		path = "/readyz"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return usageError("--addr %q: %v", addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return baton.WrapError(baton.Unavailable, err, "no answer from %s%s", addr, path)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return baton.Errorf(baton.Unavailable, "%s%s answered %s: %s", addr, path, resp.Status, baton.Truncate(string(body), 200, "…"))
	}
	_, err = fmt.Fprintf(f.IO.Out, "%s%s: ok\n", addr, path)
	return err
}
