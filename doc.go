// Package baton defines the domain of the baton context system: packets,
// loops, prompt sections, refs, goal trees, task briefs and deliveries, and
// the errors they return.
//
// The package holds types and rules only (standard library, no I/O). Every
// technology lives in its own package under internal/, and cmd/baton is the
// only place that wires them together.
package baton
