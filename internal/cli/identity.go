package cli

import (
	"os/user"
)

// actor names the person at the terminal for the phase log: BATON_ACTOR,
// else the login name.
func (f *Factory) actor() string {
	if a := f.env("BATON_ACTOR"); a != "" {
		return a
	}
	if u := f.env("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "person"
}
