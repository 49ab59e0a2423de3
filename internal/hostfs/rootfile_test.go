package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
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

// TestReadFileBelowStaysInRoot: as ReadRootFile, for any directory as
// the root (another process's /proc/PID/root); a FIFO is refused without
// blocking, and StatBelow and ReadDirBelow resolve the same way.
func TestReadFileBelowStaysInRoot(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/conf.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/my.cnf"), []byte("[mysqld]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for target, link := range map[string]string{
		"/etc/my.cnf":                           "etc/abs-inside",
		"../../../../../../" + outside:          "etc/climb",
		filepath.Join(outside, "secret"):        "etc/abs-outside",
		"/proc/self/root" + outside + "/secret": "etc/magic",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(root, "etc/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFileBelow(root, "/etc/abs-inside"); err != nil || string(b) != "[mysqld]\n" {
		t.Errorf("absolute link inside the root: %q, %v", b, err)
	}
	for _, p := range []string{"/etc/climb/secret", "/etc/abs-outside", "/etc/magic", "/../" + filepath.Base(outside) + "/secret"} {
		if b, err := ReadFileBelow(root, p); err == nil {
			t.Errorf("%s read %q from outside the root", p, b)
		}
	}
	if _, err := ReadFileBelow(root, "/etc/fifo"); !errors.Is(err, unix.EINVAL) {
		t.Errorf("a FIFO: %v, want EINVAL (not a regular file)", err)
	}
	// A device is refused before it is opened: opening /dev/null (1:3)
	// does nothing, but /dev/watchdog's open arms the watchdog.
	if os.Geteuid() == 0 {
		if err := unix.Mknod(filepath.Join(root, "etc/dev"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFileBelow(root, "/etc/dev"); !errors.Is(err, unix.EINVAL) {
			t.Errorf("a character device: %v, want EINVAL", err)
		}
	}
	if b, err := ReadFileBelow(root, "/etc/my.cnf"); err != nil || string(b) != "[mysqld]\n" {
		t.Errorf("a regular file: %q, %v", b, err)
	}
	if names, err := ReadDirBelow(root, "/etc/conf.d"); err != nil || len(names) != 0 {
		t.Errorf("ReadDirBelow = %v, %v", names, err)
	}
	st, err := StatBelow(root, "/etc/abs-inside")
	var want unix.Stat_t
	if err != nil || unix.Stat(filepath.Join(root, "etc/my.cnf"), &want) != nil || st.Ino != want.Ino {
		t.Errorf("StatBelow followed the link elsewhere: %v", err)
	}
}
