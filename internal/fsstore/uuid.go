package fsstore

import (
	"crypto/rand"
	"fmt"
)

// newUUID returns a random (version 4) UUID for a project id. Written
// here rather than imported: the UUID library links package net, whose
// pages every hook would touch at start for nothing.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])  // crypto/rand never fails on supported systems
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
