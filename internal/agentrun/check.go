package agentrun

import "github.com/baton-agent/baton/internal/proc"

// Check reports, without starting anything, whether Run could start s: it
// returns the errors Run would return before starting the agent, an
// Invalid one wrapping ErrInvalidSpec for a Spec that cannot be run and a
// NotFound one wrapping ErrNotInstalled (naming the --agent flag to pick
// another) when the executable is missing. A caller that records each run
// (the goal-tree runner commits every iteration) checks first, so a typo
// in the agent's name costs nothing.
func Check(s Spec) error {
	p, err := newPlan(s, tempDirPlaceholder)
	if err != nil {
		return err
	}
	env := mergeEnv(proc.Environ(s.PassEnv), s.Env, p.env)
	if _, err := findExecutable(p.argv[0], s.Dir, envValue(env, "PATH")); err != nil {
		return notInstalled(p, err)
	}
	return nil
}
