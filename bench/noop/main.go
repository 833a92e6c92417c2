// Command noop does nothing: bench/hooks.sh times it beside the hooks, as
// the floor any Go program pays to start on the machine at hand.
package main

func main() {}
