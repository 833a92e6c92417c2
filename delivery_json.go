package baton

import (
	"encoding/json"
	"fmt"
	"time"
)

// A DeliveryConfig's durations are written as Go duration strings
// ("1h0m0s"), for people and scripts reading `delivery show --json`, and
// read back from strings or from the nanosecond numbers earlier versions
// stored.

// MarshalJSON writes c with its durations as strings.
func (c DeliveryConfig) MarshalJSON() ([]byte, error) {
	type plain DeliveryConfig
	str := func(d time.Duration) string {
		if d == 0 {
			return ""
		}
		return d.String()
	}
	// The fields here are shallower than the embedded ones they replace.
	v := struct {
		plain
		PhaseTimeout  string           `json:"phase_timeout"`
		PhaseTimeouts map[Phase]string `json:"phase_timeouts,omitempty"`
		ObserveWindow string           `json:"observe_window,omitempty"`
		ObserveEvery  string           `json:"observe_every,omitempty"`
	}{plain: plain(c)}
	v.PhaseTimeout = c.PhaseTimeout.String()
	v.ObserveWindow, v.ObserveEvery = str(c.ObserveWindow), str(c.ObserveEvery)
	if len(c.PhaseTimeouts) > 0 {
		v.PhaseTimeouts = make(map[Phase]string, len(c.PhaseTimeouts))
		for p, d := range c.PhaseTimeouts {
			v.PhaseTimeouts[p] = d.String()
		}
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads c, its durations as strings or as nanoseconds.
func (c *DeliveryConfig) UnmarshalJSON(b []byte) error {
	type plain DeliveryConfig
	v := struct {
		*plain
		PhaseTimeout  jsonDuration           `json:"phase_timeout"`
		PhaseTimeouts map[Phase]jsonDuration `json:"phase_timeouts"`
		ObserveWindow jsonDuration           `json:"observe_window"`
		ObserveEvery  jsonDuration           `json:"observe_every"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c.PhaseTimeout = time.Duration(v.PhaseTimeout)
	c.ObserveWindow, c.ObserveEvery = time.Duration(v.ObserveWindow), time.Duration(v.ObserveEvery)
	c.PhaseTimeouts = nil
	if len(v.PhaseTimeouts) > 0 {
		c.PhaseTimeouts = make(map[Phase]time.Duration, len(v.PhaseTimeouts))
		for p, d := range v.PhaseTimeouts {
			c.PhaseTimeouts[p] = time.Duration(d)
		}
	}
	return nil
}

// jsonDuration reads a duration from a string ("1h30m") or a number of
// nanoseconds.
type jsonDuration time.Duration

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s == "" {
			*d = 0
			return nil
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want a Go duration such as 90s, 30m or 1h30m", s)
		}
		*d = jsonDuration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration %s: want a string such as \"30m\" or a number of nanoseconds", b)
	}
	*d = jsonDuration(n)
	return nil
}
