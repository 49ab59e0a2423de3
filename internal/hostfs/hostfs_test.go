package hostfs

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

func TestClassify(t *testing.T) {
	_, enoent := os.Open("/nonexistent/slowpath")
	tests := []struct {
		err  error
		want Kind
	}{
		{nil, ""},
		{enoent, KindMissing},
		{fmt.Errorf("read x: %w", syscall.EACCES), KindPermission},
		{fmt.Errorf("ioctl: %w", syscall.EPERM), KindPermission},
		{fmt.Errorf("ioctl: %w", syscall.ENOTTY), KindUnsupported},
		{fmt.Errorf("ioctl: %w", syscall.EOPNOTSUPP), KindUnsupported},
		{fmt.Errorf("parse: bad"), KindError},
	}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestNew(t *testing.T) {
	f := New("/fx")
	if f.ProcPath("net", "dev") != "/fx/proc/net/dev" || f.SysPath("block") != "/fx/sys/block" || f.RootPath("dev", "vda") != "/fx/dev/vda" {
		t.Fatalf("unexpected paths: %+v", f)
	}
}
