package host

import (
	"bufio"
	"bytes"
	"errors"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// collectOSRelease reads /etc/os-release, or /usr/lib/os-release when the
// first is absent, as os-release(5) tells readers to. Links resolve inside
// the root (a container's /host/etc/os-release names the host's file).
func collectOSRelease(fs hostfs.FS, h *snapshot.Host, s *snapshot.Snapshot) {
	for _, rel := range []string{"etc/os-release", "usr/lib/os-release"} {
		b, err := fs.ReadRootFile(rel)
		if hostfs.Classify(err) == hostfs.KindMissing && rel == "etc/os-release" {
			continue
		}
		if err != nil {
			s.AddError("host.os", fs.RootPath(rel), err)
			return
		}
		if o := parseOSRelease(b); o.ID != "" {
			h.OS = o
			return
		}
		s.AddError("host.os", fs.RootPath(rel), errors.New("no KEY=value line: not an os-release file"))
		return
	}
}

// parseOSRelease reads the fields slowpath uses from os-release's
// shell-compatible KEY=value lines: values may be quoted with " or ' and
// use backslash escapes for $, ", \\ and `. ID defaults to "linux" only
// for a file that has other content (os-release(5)); an empty file gives
// an empty ID.
func parseOSRelease(b []byte) *snapshot.OS {
	o := &snapshot.OS{}
	seen := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		seen = true
		v = unquoteOSRelease(v)
		switch k {
		case "ID":
			o.ID = v
		case "VERSION_ID":
			o.VersionID = v
		case "VARIANT_ID":
			o.VariantID = v
		case "PRETTY_NAME":
			o.PrettyName = v
		}
	}
	if seen && o.ID == "" {
		o.ID = "linux"
	}
	return o
}

func unquoteOSRelease(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		q := v[0]
		v = v[1 : len(v)-1]
		if q == '\'' {
			return v
		}
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$\"\\`", v[i+1]) >= 0 {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
