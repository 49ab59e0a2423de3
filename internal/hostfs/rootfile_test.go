package hostfs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReadRootFileStaysInRoot: an absolute link inside the root means the
// root's file, as chroot would read it; a link climbing out with ../ stops
// at the root. Neither reads the host's file of the same name.
func TestReadRootFileStaysInRoot(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, d := range []string{"etc", "usr/lib", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel, content string) {
		if err := os.WriteFile(filepath.Join(root, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		if err := os.Symlink(target, filepath.Join(root, rel)); err != nil {
			t.Fatal(err)
		}
	}
	write("usr/lib/os-release", "ID=inside\n")
	link("/usr/lib/os-release", "etc/os-release")
	link("../../../../../../.."+outside+"/secret", "etc/climb")
	link(filepath.Join(outside, "secret"), "etc/abs-outside")
	link("/proc/self/root/"+outside+"/secret", "etc/magic")
	fs := New(root)

	b, err := fs.ReadRootFile("etc/os-release")
	if err != nil || string(b) != "ID=inside\n" {
		t.Errorf("absolute link inside the root: %q, %v; want the root's usr/lib/os-release", b, err)
	}
	for _, rel := range []string{"etc/climb", "etc/abs-outside", "etc/magic", "../" + filepath.Base(outside) + "/secret"} {
		if b, err := fs.ReadRootFile(rel); err == nil {
			t.Errorf("%s read %q from outside the root", rel, b)
		}
	}
	if _, err := fs.ReadRootFile("etc"); err == nil {
		t.Error("a directory read as a file")
	}
	if err := os.WriteFile(filepath.Join(root, "tmp/big"), make([]byte, maxRootFile+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadRootFile("tmp/big"); err == nil {
		t.Error("a file over 1 MiB was read whole")
	}
	ents, err := fs.ReadRootDir("usr/lib")
	if err != nil || len(ents) != 1 || ents[0].Name() != "os-release" {
		t.Errorf("ReadRootDir(usr/lib) = %v, %v", ents, err)
	}
}
