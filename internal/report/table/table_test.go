package table

import (
	"strings"
	"testing"
)

func TestAligned(t *testing.T) {
	var b strings.Builder
	tw := New(&b)
	tw.Row("metric", "a", "b")
	tw.Row("read_p99", "1.2 ms", "")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "metric    a       b\nread_p99  1.2 ms  \n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestTSV(t *testing.T) {
	var b strings.Builder
	tw := NewTSV(&b)
	tw.Row("metric", "a")
	tw.Row("read_p99", "1.2 ms")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "metric\ta\nread_p99\t1.2 ms\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
