package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/cli"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/intake"
	"github.com/baton-agent/baton/internal/notify"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/web"
)

// serverJobs is how many notices, comments and webhooks a server works at
// once: each is a few requests to GitHub or to a notice's targets.
const serverJobs = 4

// serve runs `baton serve` as c asks (cli checked the flags and prints
// the banner, told through c.Started): one delivery service, and over it
// the HTTP edge (API, dashboard, webhooks), GitHub intake's poller, and
// the job queue working the server's jobs (notices through the notifier,
// comment feedback and webhooks through intake) and, with workers, the
// phases with their maintenance. Each runs under one errgroup: the first
// to fail stops the others, and its error is returned; a canceled ctx
// stops them all and returns nil.
func (w deliveryWiring) serve(ctx context.Context, c cli.ServeConfig) error {
	c.Deliveries.ServerJobs = serverJobs
	if c.Deliveries.WorkerID == "" {
		c.Deliveries.WorkerID = delivery.WorkerID("serve")
	}
	for _, t := range []struct{ what, url string }{{"--notify-webhook", c.Notify.WebhookURL}, {"the Slack webhook URL (--notify-slack-url-file)", c.Notify.SlackURL}} {
		if t.url != "" {
			if err := baton.CheckTargetURL(t.what, t.url); err != nil {
				return err
			}
		}
	}
	svc, err := w.open(ctx, c.Deliveries)
	if err != nil {
		return err
	}
	defer svc.Close()
	svc.Sandbox = c.Sandbox.InDataDir(svc.DataDir)
	if c.PublicURL != "" {
		svc.PublicURL = c.PublicURL
	}
	if c.Agent != "" {
		svc.DefaultAgent = c.Agent
	}
	agent := svc.DefaultAgent
	if agent == "" {
		agent = baton.DefaultAgent
	}
	if _, err := agentrun.Command(agentrun.Spec{Agent: agent, Prompt: "-"}); err != nil {
		return err
	}
	token, err := web.APIToken(c.APIToken, svc.DataDir, c.Addr)
	if err != nil {
		return err
	}
	started := cli.ServeStarted{DataDir: svc.DataDir, Agent: agent}
	if token == "" {
		if token, err = web.CreateToken(svc.DataDir); err != nil {
			return err
		}
		started.Token, started.TokenFile = token, svc.DataDir+"/"+web.TokenFile
	}

	in := &intake.Service{Deliveries: svc, GitHub: w.githubClient, WebhookSecret: c.WebhookSecret, Log: c.Log, Now: c.Now, Handle: c.Handle}
	notifier := &notify.Notifier{Store: svc.Store(), Server: c.Notify, PublicURL: svc.PublicURL, Log: c.Log, UserAgent: "baton/" + c.Version}
	feed := delivery.NewFeed(svc, 0)
	defer feed.Close()
	workers := c.Deliveries.Workers
	srv := &web.Server{
		Deliveries: svc, Feed: feed, Intake: in, Token: token, Open: web.IsLoopback(c.Addr), Repos: c.Repos, Hosts: c.Hosts,
		Agent: agentStatus(agent, workers == 0), Agents: harness.AgentNames(), Log: c.Log, Version: c.Version, Now: c.Now,
		Project: web.NewProject(c.Project, c.Now),
	}
	started.AgentFix = srv.Agent.Fix
	if !srv.Agent.Missing() {
		started.AgentFix = ""
	}

	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return baton.WrapError(baton.Unavailable, err, "listen on %s (is another baton serve running? pick another --addr)", c.Addr)
	}
	started.URL = "http://" + ln.Addr().String()
	if c.Started != nil {
		c.Started(started)
	}

	if err := svc.Requeue(ctx); err != nil {
		c.Log.Warn("notices and comments left without their job: " + baton.ErrorMessage(err))
	}
	jobs := queue.Handlers{Notice: notifier.Send, Review: svc.PostReview, Feedback: in.WorkFeedback, Webhook: in.WorkWebhook}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Serve(ctx, ln) })
	if workers > 0 {
		wk := &delivery.Worker{
			Runner: &delivery.Runner{Service: svc, Owner: c.Deliveries.WorkerID, HeartbeatEvery: c.Heartbeat},
			Lease:  c.Lease, Log: c.Log, Observe: srv.ObserveJob,
		}
		jobs.Phase, jobs.Message = wk.Work, wk.WorkMessage
		g.Go(func() error { return wk.Maintain(ctx) })
	}
	g.Go(func() error { return svc.Queue.Run(ctx, jobs) })
	g.Go(func() error { return in.Run(ctx, 0) })
	return g.Wait()
}

// agentStatus finds the agent's CLI on PATH; when it is missing, Fix says
// how to install it (from the harness table) or which agents to pick
// instead. elsewhere says that agents run on other machines' workers.
func agentStatus(agent string, elsewhere bool) web.AgentStatus {
	st := web.AgentStatus{Name: agent, Elsewhere: elsewhere}
	argv, err := agentrun.Command(agentrun.Spec{Agent: agent, Prompt: "-"})
	if err != nil || len(argv) == 0 {
		st.Fix = "pick an agent with --agent " + strings.Join(harness.AgentNames(), "|") + "|command:<argv>"
		return st
	}
	if p, err := exec.LookPath(argv[0]); err == nil {
		st.Installed, st.Path = true, p
		return st
	}
	h, err := harness.Lookup(argv[0])
	if err != nil || !h.Agent {
		st.Fix = fmt.Sprintf("%s is not on PATH: install it, or restart with another --agent.", argv[0])
		return st
	}
	install := "Install " + h.Product
	if h.Install != "" {
		install += " (" + h.Install + ")"
	}
	others := slices.DeleteFunc(harness.AgentNames(), func(n string) bool { return n == agent })
	st.Fix = install + ", or restart with --agent " + harness.OrList(append(others, "command:<argv>")) + "."
	return st
}

// serveHTTP serves the handler build makes on addr until ctx ends, with
// the API token every request needs, as `baton serve` serves its API:
// cli.Factory.ServeHTTP, for `baton mcp --http`.
func (w deliveryWiring) serveHTTP(ctx context.Context, addr string, log *slog.Logger, build func(hasToken bool) (http.Handler, error), listening func(url string)) error {
	if err := w.checkSecrets("BATON_API_TOKEN"); err != nil {
		return err
	}
	dir, err := w.dataDir()
	if err != nil {
		dir = "" // no home: no token file either
	}
	token, err := web.APIToken(w.getenv("BATON_API_TOKEN"), dir, addr)
	if err != nil {
		return err
	}
	h, err := build(token != "")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return baton.WrapError(baton.Invalid, err, "listen on %s", addr)
	}
	listening("http://" + ln.Addr().String())
	return web.Serve(ctx, ln, web.RequireToken(token, &web.WrongTokens{}, h), log)
}
