package host

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/snapshot"
)

func TestParseOSRelease(t *testing.T) {
	tests := []struct {
		name, in string
		want     *snapshot.OS
	}{
		{"debian", "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n",
			&snapshot.OS{ID: "debian", VersionID: "12", PrettyName: "Debian GNU/Linux 12 (bookworm)"}},
		{"fcos", "NAME=\"Fedora Linux\"\nVERSION_ID=41\nID=fedora\nVARIANT_ID=coreos\n",
			&snapshot.OS{ID: "fedora", VersionID: "41", VariantID: "coreos"}},
		{"single quotes and escapes", "ID='talos'\nPRETTY_NAME=\"say \\\"hi\\\" \\$HOME\"\n",
			&snapshot.OS{ID: "talos", PrettyName: `say "hi" $HOME`}},
		{"comments, blanks, no ID", "# a comment\n\nNAME=Linux\n", &snapshot.OS{ID: "linux"}},
		{"empty", "", &snapshot.OS{}},
		{"not key=value", "garbage\n", &snapshot.OS{}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, parseOSRelease([]byte(tt.in))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// FuzzOSRelease: any file gives an OS or an empty ID, never a panic, and
// what it gives passes the snapshot's validation or is refused by it with
// an error (the collector records, never fails).
func FuzzOSRelease(f *testing.F) {
	f.Add([]byte("ID=bottlerocket\nVARIANT_ID=aws-k8s-1.31\nVERSION_ID=1.36.0\n"))
	f.Add([]byte("ID=\"\\\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		o := parseOSRelease(b)
		if o == nil {
			t.Fatal("nil")
		}
	})
}
