package baton

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDeliveryConfigJSON(t *testing.T) {
	t.Parallel()
	c := DeliveryConfig{Agent: "claude", PhaseTimeout: time.Hour, PhaseTimeouts: map[Phase]time.Duration{PhaseImplement: 90 * time.Minute},
		ObserveWindow: 2 * time.Minute, MergeMethod: MergeSquash, MaxRounds: 3}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"phase_timeout":"1h0m0s"`, `"phase_timeouts":{"implement":"1h30m0s"}`, `"observe_window":"2m0s"`, `"agent":"claude"`, `"max_rounds":3`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	if strings.Contains(string(b), "observe_every") || strings.Contains(string(b), "3600000000000") {
		t.Errorf("%s: a zero duration written, or nanoseconds", b)
	}
	var back DeliveryConfig
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("round trip = %+v, %v; want %+v", back, err, c)
	}
	// What earlier versions stored: nanoseconds.
	old := `{"agent":"codex","phase_timeout":3600000000000,"phase_timeouts":{"verify":1200000000000},"observe_every":30000000000}`
	var got DeliveryConfig
	if err := json.Unmarshal([]byte(old), &got); err != nil {
		t.Fatal(err)
	}
	want := DeliveryConfig{Agent: "codex", PhaseTimeout: time.Hour, PhaseTimeouts: map[Phase]time.Duration{PhaseVerify: 20 * time.Minute}, ObserveEvery: 30 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("old config = %+v, want %+v", got, want)
	}
	if err := json.Unmarshal([]byte(`{"phase_timeout":"soon"}`), &got); err == nil || !strings.Contains(err.Error(), "30m") {
		t.Errorf("a bad duration: %v", err)
	}
}

// FuzzDeliveryConfigJSON: whatever config JSON is accepted is written
// back with string durations and reads back to the same config.
func FuzzDeliveryConfigJSON(f *testing.F) {
	f.Add(`{"agent":"claude","phase_timeout":"1h","phase_timeouts":{"implement":"90m"}}`)
	f.Add(`{"phase_timeout":3600000000000,"observe_window":120000000000}`)
	f.Add(`{"phase_timeout":"-5s","observe_every":"1h2m3.5s"}`)
	f.Fuzz(func(t *testing.T, in string) {
		var c DeliveryConfig
		if json.Unmarshal([]byte(in), &c) != nil {
			return
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("marshal %+v: %v", c, err)
		}
		var back DeliveryConfig
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s does not read back: %v", b, err)
		}
		if len(c.PhaseTimeouts) == 0 {
			c.PhaseTimeouts = nil
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("%s read back as %+v, want %+v", b, back, c)
		}
	})
}
