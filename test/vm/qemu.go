package vm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/lab/cryptbench"
)

// Console markers between the guest's /init and ParseConsole, each on a
// line of its own (a newline first: a tool's progress line may lack one).
// Kernel messages are silenced (printk level 1) before the result files
// are sent.
const (
	markStart   = "@@VM-SCENARIO-START@@"
	markFile    = "@@VM-FILE "
	markFileEnd = "@@VM-FILE-END@@"
	markExit    = "@@VM-EXIT "
)

// initScript is the guest's /init: mount the pseudo filesystems, load the
// modules, run /scenario.sh, record what the scenario left behind, send
// /results/* over the console in base64 and power off.
var initScript = `#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu
# No udev in the guest: libdevmapper creates /dev/mapper nodes itself.
export DM_DISABLE_UDEV=1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /run/cryptsetup /run/lock /dev/mapper
echo /sbin/modprobe > /proc/sys/kernel/modprobe
for m in ` + strings.Join(GuestModules, " ") + `; do modprobe $m || echo "vm: modprobe $m failed"; done
cd /tmp
echo; echo "` + markStart + `"
sh /scenario.sh
rc=$?
[ $rc -eq 0 ] || { echo "vm: scenario exited $rc; last kernel messages:"; dmesg | tail -40; }
sync
echo 1 > /proc/sys/kernel/printk
{
	for d in /sys/block/*; do
		n=${d##*/}
		case $n in
		dm-*|ram*|nbd*|zram*) echo "block $n" ;;
		loop*) [ -e $d/loop/backing_file ] && echo "block $n" ;;
		esac
	done
	for d in /sys/bus/netdevsim/devices/*; do [ -e "$d" ] && echo "netdevsim ${d##*/}"; done
	grep -E '^(brd|netdevsim) ' /proc/modules | cut -d' ' -f1 | sed 's/^/module /'
} > /results/.leftover
for f in /results/* /results/.leftover; do
	[ -f "$f" ] || continue
	echo; echo "` + markFile + `${f##*/} $(sha256sum < "$f" | cut -d' ' -f1)@@"
	base64 "$f"
	echo "` + markFileEnd + `"
done
echo; echo "` + markExit + `$rc@@"
reboot -f
`

// Scenario is one script run in a fresh VM.
type Scenario struct {
	Name   string
	Script string            // run with sh (busybox ash) as /scenario.sh
	Files  map[string][]byte // extra files: guest path (relative to /) -> content
	// Timeout bounds the whole boot; 0 means 3 minutes.
	Timeout time.Duration
	// Icount boots with an instruction-count clock (IcountArgs) and
	// IcountParam on the kernel command line, which tells slowpath lab
	// crypt in the guest that its figures are a model.
	Icount bool
	// SMP is the number of vCPUs; 0 means 1. Two let a sender on one CPU
	// outrun the receive backlog of the other (RPS).
	SMP int
	// Programs are host programs (or shared objects) only this scenario
	// needs, added to its own archive with the libraries ldd resolves, as
	// GuestTools are to the base: a database server and its libraries
	// are 60 MB that no other scenario should carry.
	Programs []string
	// Trees are host directories added whole to the scenario's archive
	// (regular files and symlinks): a program's data files.
	Trees []string
	// MemoryMiB is the guest's memory; 0 means 1536.
	MemoryMiB int
}

// Result is what came back from the guest.
type Result struct {
	ExitCode int
	Console  []byte            // everything the guest wrote on ttyS0
	Files    map[string][]byte // /results/NAME
	// Leftover lists devices and modules the scenario did not remove:
	// "block dm-0", "netdevsim netdevsim1", "module brd".
	Leftover []string
	Duration time.Duration
}

// Lab boots scenarios on a prepared kernel and base initramfs.
type Lab struct {
	Kernel   *Kernel
	Base     *Base
	Slowpath string // static slowpath binary, installed as /usr/bin/slowpath
	TmpDir   string
}

// QemuCommand is the qemu invocation: TCG (KVM does not work on the hosts we
// test on), one vCPU unless the scenario asks for more, no network device in the guest (-nic none; -nographic
// alone would add one), serial console on stdio, and exit instead of reboot.
func QemuCommand(kernelImage, initrd, cmdline string, smp int, cpu string) []string {
	if smp < 1 {
		smp = 1
	}
	if cpu == "" {
		cpu = "max"
	}
	accel := "tcg"
	if smp > 1 {
		// Round-robin TCG: one host thread runs the vCPUs in turn. With a
		// thread per vCPU (MTTCG, qemu 7.2) the kernel's cross-CPU code
		// patching (text_poke_bp, behind every static key flip) sometimes
		// leaves one vCPU running a stale translation holding the int3
		// after the patch is done: "Oops: int3" in sched_clock_cpu, a
		// kernel panic at boot (seen once in CI on 6.12). In turn, a vCPU
		// is switched out only between translated blocks, so it always sees
		// the other's finished writes.
		accel = "tcg,thread=single"
	}
	return []string{"qemu-system-x86_64",
		"-accel", accel, "-cpu", cpu, "-m", "1536", "-smp", strconv.Itoa(smp),
		"-nodefaults", "-nic", "none", "-display", "none", "-serial", "stdio", "-no-reboot",
		"-kernel", kernelImage, "-initrd", initrd, "-append", cmdline}
}

// IcountArgs make the guest deterministic enough to compare runs: with
// -icount shift=0 the virtual CPU executes one instruction per virtual
// nanosecond and every guest clock (TSC, timers) follows the instruction
// count, not the host; sleep=off jumps virtual time to the next timer
// deadline when the CPU idles instead of letting it follow host time
// (qemu-options.hx, -icount: "This behavior gives deterministic execution
// times from the guest point of view"). -seed replaces the host's random
// source behind RDRAND and the guest's other random inputs with a fixed
// PRNG; -rtc clock=vm with a fixed base keeps the host's date out of the
// guest. TCG with icount runs one vCPU thread.
var IcountArgs = []string{"-icount", fmt.Sprintf("shift=%d,sleep=off", IcountShift), "-seed", "1", "-rtc", "base=2026-01-01T00:00:00,clock=vm"}

// IcountShift is the -icount shift: one guest instruction is 2^IcountShift
// ns of guest time.
const IcountShift = 0

// IcountParam on the guest kernel command line tells slowpath in the guest
// that it runs under IcountArgs (cryptbench.IcountShift reads it).
var IcountParam = fmt.Sprintf("%s=%d", cryptbench.IcountParam, IcountShift)

// Cmdline is the guest kernel command line.
// no_timer_check: under TCG on a loaded host the IO-APIC timer check of
// 5.10 can miss its ticks and panic ("IO-APIC + timer doesn't work",
// arch/x86/kernel/apic/io_apic.c check_timer); the check is for broken
// chipsets, not for qemu's.
const Cmdline = "console=ttyS0 panic=-1 quiet rdinit=/init 8250.nr_uarts=1 i8042.noaux i8042.nokbd i8042.nopnp no_timer_check"

// Run boots one scenario and returns its result. An error means the VM did
// not complete (timeout, qemu failure, garbled console); Result.Console is
// set whenever there was output.
func (l *Lab) Run(ctx context.Context, s Scenario) (*Result, error) {
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	initrd, err := l.initrd(s)
	if err != nil {
		return nil, err
	}
	defer os.Remove(initrd)

	args := QemuCommand(l.Kernel.Image, initrd, Cmdline, s.SMP, l.Kernel.CPU)
	if s.Icount {
		args = QemuCommand(l.Kernel.Image, initrd, Cmdline+" "+IcountParam, s.SMP, l.Kernel.CPU)
		args = append(args, IcountArgs...)
	}
	if s.MemoryMiB > 0 {
		args[slices.Index(args, "-m")+1] = strconv.Itoa(s.MemoryMiB)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var console bytes.Buffer
	cmd.Stdout = &console
	cmd.Stderr = &console
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	res := &Result{Console: console.Bytes(), Duration: time.Since(start)}
	if ctx.Err() != nil {
		return res, fmt.Errorf("scenario %s: no power-off within %v (hard timeout)", s.Name, timeout)
	}
	if runErr != nil {
		return res, fmt.Errorf("qemu: %w", runErr)
	}
	exit, files, err := ParseConsole(res.Console)
	if err != nil {
		return res, err
	}
	res.ExitCode = exit
	res.Files = files
	for _, l := range strings.Split(string(files[".leftover"]), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			res.Leftover = append(res.Leftover, l)
		}
	}
	sort.Strings(res.Leftover)
	delete(res.Files, ".leftover")
	return res, nil
}

// initrd concatenates the base archive with one holding slowpath and the
// scenario; the kernel unpacks both into the same rootfs.
func (l *Lab) initrd(s Scenario) (string, error) {
	f, err := os.CreateTemp(l.TmpDir, "initrd-*.cpio")
	if err != nil {
		return "", err
	}
	defer f.Close()
	base, err := os.Open(l.Base.Path)
	if err != nil {
		return "", err
	}
	defer base.Close()
	if _, err := io.Copy(f, base); err != nil {
		return "", err
	}
	entries := map[string]cpioEntry{}
	if l.Slowpath != "" {
		if err := addHostFile(entries, l.Slowpath, "usr/bin/slowpath"); err != nil {
			return "", err
		}
	}
	entries["scenario.sh"] = cpioEntry{Mode: cpioFile | 0o755, Data: []byte(l.toolFuncs() + s.Script)}
	for _, p := range s.Programs {
		if err := addProgram(entries, p); err != nil {
			return "", err
		}
	}
	for _, d := range s.Trees {
		if err := addHostTree(entries, d); err != nil {
			return "", err
		}
	}
	for p, b := range s.Files {
		p = strings.TrimPrefix(filepath.Clean("/"+p), "/")
		addDir(entries, filepath.Dir(p))
		entries[p] = cpioEntry{Mode: cpioFile | 0o644, Data: b}
	}
	w := bufio.NewWriter(f)
	if err := writeCPIO(w, entries); err != nil {
		return "", err
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}

// toolFuncs defines a shell function per host tool: Debian's static busybox
// sh runs its own applets (losetup, mke2fs) before anything on PATH.
func (l *Lab) toolFuncs() string {
	names := make([]string, 0, len(l.Base.Tools))
	for n := range l.Base.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s() { %s \"$@\"; }\n", n, l.Base.Tools[n])
	}
	return b.String()
}

// ElideFiles returns console with the base64 bodies of result files
// replaced by a line count, for printing.
func ElideFiles(console []byte) []byte {
	var out bytes.Buffer
	in, n := false, 0
	for _, line := range strings.SplitAfter(string(console), "\n") {
		t := strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(t, markFile):
			in, n = true, 0
			out.WriteString(line)
		case in && t == markFileEnd:
			in = false
			fmt.Fprintf(&out, "[%d lines of base64]\n", n)
			out.WriteString(line)
		case in:
			n++
		default:
			out.WriteString(line)
		}
	}
	return out.Bytes()
}

// ParseConsole extracts the exit status and result files from the guest's
// console output. Each file is checked against the sha256 the guest sent.
func ParseConsole(console []byte) (exit int, files map[string][]byte, err error) {
	files = map[string][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(console))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var (
		name, sum string
		body      *strings.Builder
		started   bool
	)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case line == markStart:
			started = true
		case !started:
		case body != nil && line == markFileEnd:
			b, err := base64.StdEncoding.DecodeString(body.String())
			if err != nil {
				return 0, nil, fmt.Errorf("result file %s: %w", name, err)
			}
			if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
				return 0, nil, fmt.Errorf("result file %s: sha256 mismatch (console garbled?)", name)
			}
			files[name] = b
			body = nil
		case body != nil:
			body.WriteString(line)
		case strings.HasPrefix(line, markFile) && strings.HasSuffix(line, "@@"):
			f := strings.Fields(strings.TrimSuffix(strings.TrimPrefix(line, markFile), "@@"))
			if len(f) != 2 {
				return 0, nil, fmt.Errorf("bad file marker %q", line)
			}
			name, sum, body = f[0], f[1], &strings.Builder{}
		case strings.HasPrefix(line, markExit) && strings.HasSuffix(line, "@@"):
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, markExit), "@@"))
			if err != nil {
				return 0, nil, fmt.Errorf("bad exit marker %q", line)
			}
			return n, files, nil
		}
	}
	if !started {
		return 0, nil, errors.New("the guest never started the scenario (kernel or /init failed; see console)")
	}
	return 0, nil, errors.New("the guest did not report an exit status (crashed or hung; see console)")
}
