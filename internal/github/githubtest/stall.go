package githubtest

import (
	"net/http"
	"slices"
	"sync"
)

// Stalled reports on requests that Stall holds.
type Stalled struct {
	route                   route
	release                 chan struct{} // closed when the test ends
	arrived                 chan struct{}
	abandoned               chan struct{}
	arriveOnce, abandonOnce sync.Once
}

// Stall makes requests that match route (as Fail takes it) hang, as a
// GitHub that stopped answering does, until their client gives up (its
// request is cancelled) or the test ends. A test waits on the Stalled it
// returns to see a request arrive and then be abandoned, which tells it
// that the code under test cancelled the request rather than waiting it out.
func (s *Server) Stall(route string) *Stalled {
	s.t.Helper()
	st := &Stalled{route: s.mustRoute(route), release: make(chan struct{}), arrived: make(chan struct{}), abandoned: make(chan struct{})}
	// Cleanups run last-in first-out: this one before the server closes,
	// which waits for requests in flight.
	s.t.Cleanup(func() { close(st.release) })
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalls = append(s.stalls, st)
	return st
}

// Unstall lets requests that st held go through from now on, as a GitHub
// that answers again does. Requests it holds stay held.
func (s *Server) Unstall(st *Stalled) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalls = slices.DeleteFunc(s.stalls, func(x *Stalled) bool { return x == st })
}

// Arrived is closed when the first matching request arrives.
func (st *Stalled) Arrived() <-chan struct{} { return st.arrived }

// Abandoned is closed when the client of a held request gives up on it.
func (st *Stalled) Abandoned() <-chan struct{} { return st.abandoned }

// stallFor returns the stall that holds a request, if any. Call with s.mu
// held.
func (s *Server) stallFor(method, apiPath, field string) *Stalled {
	for i := len(s.stalls) - 1; i >= 0; i-- {
		if s.stalls[i].route.match(method, apiPath, field) {
			return s.stalls[i]
		}
	}
	return nil
}

// hold keeps r waiting until its client gives up or the test ends.
func (st *Stalled) hold(w http.ResponseWriter, r *http.Request) {
	st.arriveOnce.Do(func() { close(st.arrived) })
	select {
	case <-r.Context().Done():
		st.abandonOnce.Do(func() { close(st.abandoned) })
	case <-st.release:
		writeError(w, http.StatusGatewayTimeout, "the test ended while this request was stalled", docREST)
	}
}
