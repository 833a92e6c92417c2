package delivery

import (
	"testing"

	"github.com/baton-agent/baton"
)

// A change notifies when it makes the delivery wait for a person, fail or
// close, once per state entered.
func TestNoticeOf(t *testing.T) {
	t.Parallel()
	at := func(p baton.Phase, s baton.RunStatus, queued bool) *baton.Delivery {
		d := fixture(p, s)
		d.Queued = queued
		return &d
	}
	for _, tc := range []struct {
		name          string
		before, after *baton.Delivery
		want          string
	}{
		{"plan ran, waits at its checkpoint", at(baton.PhasePlan, baton.StatusRunning, false), at(baton.PhasePlan, baton.StatusSucceeded, false), NoticeWaiting},
		{"deploy entered by the system", at(baton.PhaseVerify, baton.StatusRunning, false), at(baton.PhaseDeploy, baton.StatusPending, false), NoticeWaiting},
		{"review blocked", at(baton.PhaseReview, baton.StatusRunning, false), at(baton.PhaseReview, baton.StatusBlocked, false), NoticeWaiting},
		{"queued for a worker", at(baton.PhaseVerify, baton.StatusRunning, false), at(baton.PhaseDeploy, baton.StatusPending, true), ""},
		{"implement failed", at(baton.PhaseImplement, baton.StatusRunning, false), at(baton.PhaseImplement, baton.StatusFailed, false), NoticeFailed},
		{"failed again, unchanged", at(baton.PhaseImplement, baton.StatusFailed, false), at(baton.PhaseImplement, baton.StatusFailed, false), ""},
		{"closed", at(baton.PhaseDeploy, baton.StatusPending, false), at(baton.PhaseClose, baton.StatusFailed, false), NoticeClosed},
		{"delivered", at(baton.PhaseObserve, baton.StatusRunning, false), at(baton.PhaseClose, baton.StatusSucceeded, false), NoticeClosed},
		{"running", at(baton.PhaseImplement, baton.StatusPending, true), at(baton.PhaseImplement, baton.StatusRunning, false), ""},
	} {
		n, ok := noticeOf(tc.before, tc.after, []baton.PhaseLogEntry{{Note: "why"}}, t0)
		got := ""
		if ok {
			got = n.Event
			if n.Reason != "why" || n.Delivery.ID != tc.after.ID || n.Delivery.Phase != string(tc.after.Phase) {
				t.Errorf("%s: notice %+v", tc.name, n)
			}
		}
		if got != tc.want {
			t.Errorf("%s: notice %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A failed delivery's notice carries its error (docs/delivery.md, the
// notice's fields), cut to 1 KiB; a waiting one's has none.
func TestNoticeCarriesTheError(t *testing.T) {
	t.Parallel()
	before, after := fixture(baton.PhaseImplement, baton.StatusRunning), fixture(baton.PhaseImplement, baton.StatusFailed)
	after.Error = "agent exited 1: " + string(make([]byte, 2000))
	n, ok := noticeOf(&before, &after, nil, t0)
	if !ok || n.Event != NoticeFailed || len(n.Delivery.Error) > 1024+len("…") || n.Delivery.Error[:16] != "agent exited 1: " {
		t.Errorf("failed notice = %v %+v, want the error cut to 1 KiB", ok, n.Delivery)
	}
	waiting := fixture(baton.PhasePlan, baton.StatusSucceeded)
	if n, _ := noticeOf(&before, &waiting, nil, t0); n.Delivery.Error != "" {
		t.Errorf("waiting notice has error %q", n.Delivery.Error)
	}
}
