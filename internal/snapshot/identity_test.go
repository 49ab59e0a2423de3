package snapshot

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseVMBusDeviceID(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "{00000000-0001-8899-0000-000000000000}", want: "00000000-0001-8899-0000-000000000000"},
		{in: "{F8B3781A-1E82-4818-A1C3-63D806EC15BB}", want: "f8b3781a-1e82-4818-a1c3-63d806ec15bb"},
		{in: "00000000-0001-8899-0000-000000000000", bad: true},   // no braces
		{in: "{00000000-0001-8899-0000-00000000000}", bad: true},  // short
		{in: "{00000000x0001-8899-0000-000000000000}", bad: true}, // separator
		{in: "{0000000g-0001-8899-0000-000000000000}", bad: true}, // not hex
		{in: "", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseVMBusDeviceID(tt.in)
		if tt.bad {
			if !errors.Is(err, ErrVMBusDeviceID) {
				t.Errorf("ParseVMBusDeviceID(%q) = %q, %v; want ErrVMBusDeviceID", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseVMBusDeviceID(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestParseSCSIAddress(t *testing.T) {
	tests := []struct {
		in   string
		want SCSIAddress
		bad  bool
	}{
		{in: "1:0:1:0", want: SCSIAddress{Host: 1, Target: 1}},
		{in: "0:0:0:1", want: SCSIAddress{LUN: 1}},
		{in: "2:0:0:18446744073709551615", want: SCSIAddress{Host: 2, LUN: 1<<64 - 1}},
		{in: "0:0:0", bad: true},
		{in: "0:0:0:0:0", bad: true},
		{in: "0:0:x:0", bad: true},
		{in: "0:0:-1:0", bad: true},
		{in: "", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseSCSIAddress(tt.in)
		if tt.bad {
			if !errors.Is(err, ErrSCSIAddress) {
				t.Errorf("ParseSCSIAddress(%q) = %+v, %v; want ErrSCSIAddress", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSCSIAddress(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// FuzzParseVMBusDeviceID: never panics; an accepted value is 38 bytes and
// gives back its own GUID, lower-cased.
func FuzzParseVMBusDeviceID(f *testing.F) {
	f.Add("{00000000-0001-8899-0000-000000000000}")
	f.Add("{f8b3781a-1e82-4818-a1c3-63d806ec15bb}")
	f.Add("{not-a-guid}")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseVMBusDeviceID(s)
		if err != nil {
			if !errors.Is(err, ErrVMBusDeviceID) {
				t.Fatalf("error %v is not ErrVMBusDeviceID", err)
			}
			return
		}
		if g != strings.ToLower(s[1:37]) {
			t.Fatalf("ParseVMBusDeviceID(%q) = %q", s, g)
		}
	})
}

// FuzzParseSCSIAddress: never panics; an accepted address prints back to
// the same four numbers.
func FuzzParseSCSIAddress(f *testing.F) {
	f.Add("1:0:1:0")
	f.Add("0:0:0:1")
	f.Add("6:0:x")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseSCSIAddress(s)
		if err != nil {
			if !errors.Is(err, ErrSCSIAddress) {
				t.Fatalf("error %v is not ErrSCSIAddress", err)
			}
			return
		}
		b, err := ParseSCSIAddress(fmt.Sprintf("%d:%d:%d:%d", a.Host, a.Channel, a.Target, a.LUN))
		if err != nil || a != b {
			t.Fatalf("ParseSCSIAddress(%q) = %+v; printed back: %+v, %v", s, a, b, err)
		}
	})
}
