package fsstore

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Packets written in the same second are ordered by when their files were
// written, then by id as people read it ("-10" after "-9"), the same way
// by every reader: latest, the listing, the newest for pending files.
func TestSameSecondOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	second := time.Date(2026, 11, 22, 9, 34, 0, 0, time.UTC)
	s := Open(t.TempDir(), Options{Now: func() time.Time { return second }})
	setMod := func(id string, at time.Time) {
		t.Helper()
		if err := os.Chtimes(s.packetPath(id), at, at); err != nil {
			t.Fatal(err)
		}
	}
	create := func(purpose string) string {
		t.Helper()
		p := testPacket(purpose)
		if err := s.CreatePacket(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	check := func(what string, want []string) {
		t.Helper()
		l, err := s.Latest()
		if err != nil || l.Packet == nil || l.Packet.ID != want[0] {
			t.Errorf("%s: Latest() = %+v, %v, want %s", what, l.Packet, err, want[0])
		}
		if n, err := s.NewestPacket(); err != nil || n == nil || n.ID != want[0] {
			t.Errorf("%s: NewestPacket() = %+v, %v, want %s", what, n, err, want[0])
		}
		var listed, summed []string
		ps, _, _ := s.FindPackets(PacketFilter{})
		for _, p := range ps {
			listed = append(listed, p.ID)
		}
		sums, _, _ := s.PacketSummaries()
		for _, p := range sums {
			summed = append(summed, p.ID)
		}
		if diff := cmp.Diff(want, listed); diff != "" {
			t.Errorf("%s: FindPackets order (-want +got):\n%s", what, diff)
		}
		if diff := cmp.Diff(want, summed); diff != "" {
			t.Errorf("%s: PacketSummaries order (-want +got):\n%s", what, diff)
		}
	}

	// "zeta" then "alpha", written 100 ms apart in one second: alpha is
	// the newer, whatever the ids say.
	zeta := create("zeta")
	alpha := create("alpha")
	setMod(zeta, second.Add(200*time.Millisecond))
	setMod(alpha, second.Add(300*time.Millisecond))
	check("written 100 ms apart", []string{alpha, zeta})
	// Written at the same instant, they still have one order.
	setMod(alpha, second.Add(200*time.Millisecond))
	check("written together", []string{zeta, alpha})

	// Ten packets of one purpose in one second, their files written at
	// the same instant: "-10" is the newest, not "-9".
	s = Open(t.TempDir(), Options{Now: func() time.Time { return second }})
	var ids []string
	for range 10 {
		ids = append(ids, create("retry"))
	}
	for _, id := range ids {
		setMod(id, second)
	}
	if ids[9] != "20261122T093400Z-retry-10" {
		t.Fatalf("the tenth id is %s", ids[9])
	}
	want := make([]string, 10)
	for i, id := range ids {
		want[9-i] = id
	}
	check("ten in one instant", want)
}

func TestCompareIDs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"x-9", "x-10", -1},
		{"x", "x-2", -1},
		{"x-2", "x-2", 0},
		{"20261122T093400Z-alpha", "20261122T093400Z-zeta", -1},
		{"20261122T093400Z-zeta", "20261122T093401Z-alpha", -1},
		{"a09", "a9", -1},
		{"a9", "a10", -1},
		{"fix-issue-42", "fix-issue-42-2", -1},
		{"", "a", -1},
	} {
		if got := compareIDs(tt.a, tt.b); got != tt.want {
			t.Errorf("compareIDs(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := compareIDs(tt.b, tt.a); got != -tt.want {
			t.Errorf("compareIDs(%q, %q) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}

// FuzzCompareIDs checks that compareIDs is an order: antisymmetric, zero
// only for equal ids, transitive, and numeric on suffixes.
func FuzzCompareIDs(f *testing.F) {
	f.Add("x-9", "x-10", "x-09", uint16(9), uint16(10))
	f.Add("20261122T093400Z-zeta", "20261122T093400Z-alpha", "a", uint16(0), uint16(1))
	f.Fuzz(func(t *testing.T, a, b, c string, m, n uint16) {
		ab, ba := compareIDs(a, b), compareIDs(b, a)
		if ab != -ba || (ab == 0) != (a == b) {
			t.Fatalf("compareIDs(%q, %q) = %d, reversed %d", a, b, ab, ba)
		}
		if ab <= 0 && compareIDs(b, c) <= 0 && compareIDs(a, c) > 0 {
			t.Fatalf("not transitive: %q <= %q <= %q but %q > %q", a, b, c, a, c)
		}
		x, y := "base-"+strconv.Itoa(int(m)), "base-"+strconv.Itoa(int(n))
		if got, want := compareIDs(x, y), sign(int(m)-int(n)); got != want {
			t.Fatalf("compareIDs(%q, %q) = %d, want %d", x, y, got, want)
		}
	})
}
