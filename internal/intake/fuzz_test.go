package intake

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/agentrun"
	"github.com/baton-agent/baton/internal/delivery"
	"github.com/baton-agent/baton/internal/queue"
	"github.com/baton-agent/baton/internal/sqlstore"
	"github.com/baton-agent/baton/internal/sqlstore/sqlstoretest"
)

var payloadSeeds = []string{
	`{"action":"labeled","label":{"name":"baton"},"repository":{"full_name":"octo/app","html_url":"https://github.com/octo/app"},"issue":{"number":7,"title":"Crash","state":"open","html_url":"https://github.com/octo/app/issues/7","labels":[{"name":"baton"}]}}`,
	`{"action":"closed","repository":{"full_name":"octo/app"},"issue":{"number":7,"state":"closed","pull_request":{"url":"x"}}}`,
	`{"zen":"hi","repository":{"full_name":"octo/app"}}`,
	`{"issue":null,"label":null}`, `[]`, `null`, `{"issue":{"number":-1}}`,
}

// A payload that parses encodes and parses again to the same value.
func FuzzParsePayload(f *testing.F) {
	for _, s := range payloadSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := ParsePayload(body)
		if err != nil {
			return
		}
		again, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := ParsePayload(again)
		if err != nil || !reflect.DeepEqual(p, p2) {
			t.Fatalf("round trip: %q parsed to %+v, re-encoded %s, parsed to %+v (%v)", body, p, again, p2, err)
		}
	})
}

// Whatever the body, a signature made with another secret is refused
// before anything is read or stored, and the right signature is never
// refused as a bad one.
func FuzzWebhookSignature(f *testing.F) {
	for _, s := range payloadSeeds {
		f.Add([]byte(s), "issues")
	}
	q, err := queue.Open(f.Context(), sqlstoretest.DSN(f, sqlstore.SQLite), queue.Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { q.Close() })
	svc := &delivery.Service{Queue: q, DataDir: f.TempDir(), DefaultAgent: "command:true"}
	in := &Service{Deliveries: svc, WebhookSecret: "server-secret"}
	if _, err := in.Add(f.Context(), SourceInput{Repo: "octo/app"}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, event string) {
		if _, err := in.Webhook(t.Context(), WebhookRequest{Event: event, Signature: Sign("wrong-secret", body), Body: body}); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("a body signed with another secret: %v", err)
		}
		if _, err := in.Webhook(t.Context(), WebhookRequest{Event: event, Signature: Sign("server-secret", body), Body: body}); errors.Is(err, ErrBadSignature) || errors.Is(err, ErrNoSignature) {
			t.Fatalf("the right signature was refused: %v", err)
		}
		if _, err := in.Webhook(t.Context(), WebhookRequest{Event: event, Body: body}); !errors.Is(err, ErrNoSignature) {
			t.Fatalf("no signature: %v", err)
		}
	})
}

// A source input from the API that is accepted never sets a command
// agent (the agent is one of the named CLIs or none) nor an API URL.
func FuzzApplySourceInput(f *testing.F) {
	f.Add("claude", "baton", "review", "plan,deploy", "https://ghe.example/api/v3/")
	f.Add("command:sh -c evil", "", "", "", "")
	f.Add(" command:true ", "x", "close", "", "http://x")
	f.Add("Command:true", "", "", "", "")
	f.Fuzz(func(t *testing.T, agent, label, endpoint, checkpoints, apiURL string) {
		src := &baton.Source{Repo: "octo/app", Label: baton.DefaultSourceLabel}
		cps := []string{checkpoints}
		err := apply(src, SourceInput{Agent: &agent, Label: &label, Endpoint: &endpoint, Checkpoints: &cps, APIURL: &apiURL}, nil)
		if err != nil {
			return
		}
		if src.APIURL != "" {
			t.Fatalf("an API source input set the API URL %q, where the token would go", src.APIURL)
		}
		if src.Agent == "" {
			return
		}
		argv, err := agentrun.Command(agentrun.Spec{Agent: src.Agent, Prompt: "-"})
		if err != nil {
			t.Fatalf("accepted agent %q that cannot run: %v", src.Agent, err)
		}
		switch argv[0] {
		case "claude", "codex", "droid":
		default:
			t.Fatalf("an API source input set agent %q, which runs %q", agent, argv[0])
		}
	})
}

// A form body's payload is the event exactly: any JSON sent as GitHub's
// form (payload=<urlencoded>) comes back byte for byte, a JSON body comes
// back as it is, and nothing panics.
func FuzzEventJSON(f *testing.F) {
	for _, s := range payloadSeeds {
		f.Add([]byte(s), "application/x-www-form-urlencoded")
		f.Add([]byte(s), "application/json")
	}
	f.Add([]byte("payload=%7B%7D&payload=x"), "application/x-www-form-urlencoded; charset=utf-8")
	f.Add([]byte("%zz"), "APPLICATION/X-WWW-FORM-URLENCODED")
	f.Fuzz(func(t *testing.T, event []byte, contentType string) {
		got, err := EventJSON(contentType, event)
		if mt, _, perr := mime.ParseMediaType(contentType); perr != nil || !strings.EqualFold(mt, "application/x-www-form-urlencoded") {
			if err != nil || !bytes.Equal(got, event) {
				t.Fatalf("EventJSON(%q, %q) = %q, %v; want the body as it is", contentType, event, got, err)
			}
			return
		}
		if !utf8.Valid(event) {
			return // a form value is text
		}
		form := url.Values{"payload": {string(event)}}.Encode()
		got, err = EventJSON(contentType, []byte(form))
		if err != nil || !bytes.Equal(got, event) {
			t.Fatalf("EventJSON(form of %q) = %q, %v; want the payload back", event, got, err)
		}
	})
}

// Whatever a comment says around it, a line of its own that starts with
// the handle mentions it; the same line quoted, or the handle run into a
// longer name, does not; text without an @ never does.
func FuzzMentions(f *testing.F) {
	for _, s := range []string{"", "thanks", "LGTM\n\nship it", "a\tb\r\nc", "x: y, (z)!", "émoji 🎉 text"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if strings.ContainsAny(text, "@`~>") {
			return // those mark mentions, code and quotes: the property is about plain text
		}
		if Mentions(text, "@baton") {
			t.Fatalf("Mentions(%q) = true without an @", text)
		}
		if !Mentions(text+"\n@baton please look", "@baton") {
			t.Fatalf("Mentions(%q + a line starting @baton) = false", text)
		}
		if Mentions(text+"\n> @baton please look", "@baton") {
			t.Fatalf("Mentions(%q + a quoted mention) = true", text)
		}
		if Mentions(text+"\n@batonista please look", "@baton") {
			t.Fatalf("Mentions(%q + @batonista) = true", text)
		}
	})
}
