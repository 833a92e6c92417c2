//go:build !linux

package main

// harden does nothing where there is no PR_SET_DUMPABLE.
func harden() {}
