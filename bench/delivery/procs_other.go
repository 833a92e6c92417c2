//go:build !linux

package main

import (
	"errors"
	"time"
)

type procWatch struct{}

type procCount struct {
	forks, execs, agent int
	byProg              []progCount
	lost                bool
	spans               []procSpan
}

type procSpan struct {
	pid        uint32
	top        bool
	start, end time.Time
	prog, argv string
	agent      bool
}

type progCount struct {
	prog string
	n    int
}

func watchProcs(string) (*procWatch, error) {
	return nil, errors.New("process events: Linux only")
}

func (*procWatch) start()           {}
func (*procWatch) stop()            {}
func (*procWatch) close()           {}
func (*procWatch) count() procCount { return procCount{} }
