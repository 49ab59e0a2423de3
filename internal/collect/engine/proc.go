package engine

import (
	"bytes"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/collect/sampler"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// process is one database server found under /proc.
type process struct {
	pid    int
	comm   string
	argv   []string
	engine string
}

// maxCmdline bounds /proc/PID/cmdline; the kernel itself serves up to the
// argument area (ARG_MAX), far more than any server's command line.
const maxCmdline = 64 << 10

// listProcesses finds the database servers under fs.Proc, in pid order.
// A server is told by its comm (/proc/PID/comm, the basename execve was
// given, cut to 15 bytes: TASK_COMM_LEN 16) or its argv[0]'s basename.
func listProcesses(fs hostfs.FS) ([]process, error) {
	ents, err := os.ReadDir(fs.ProcPath())
	if err != nil {
		return nil, err
	}
	comms := map[int]string{}
	var out []process
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid <= 0 {
			continue
		}
		comm, err := hostfs.ReadValue(fs.ProcPath(ent.Name(), "comm"))
		if err != nil || !candidate(comm) {
			continue // gone since the listing, or another program
		}
		comms[pid] = comm
		argv := readCmdline(fs.ProcPath(ent.Name(), "cmdline"))
		eng := identify(comm, argv, fs.ProcPath(ent.Name(), "exe"))
		if eng == "" {
			continue
		}
		if eng == snapshot.EnginePostgreSQL && parentIsPostgres(fs, pid) {
			continue // a backend or auxiliary process of a postmaster
		}
		out = append(out, process{pid: pid, comm: comm, argv: argv, engine: eng})
	}
	slices.SortFunc(out, func(a, b process) int { return a.pid - b.pid })
	return out, nil
}

// candidate is a cheap first test on comm, before the command line is read.
func candidate(comm string) bool {
	if len(comm) > 15 {
		return false // not a comm the kernel gives (TASK_COMM_LEN 16)
	}
	switch comm {
	case "mariadbd", "mysqld", "postgres", "postmaster", "mongod", "cockroach":
		return true
	}
	return strings.HasPrefix(comm, "clickhouse")
}

// identify names the engine of a process, or "" when it is not a server:
// clickhouse is one binary whose first argument picks the tool, cockroach
// serves only under start and start-single-node. A mysqld that is MariaDB
// (Debian links mysqld to mariadbd, and MariaDB before 10.5 was mysqld)
// is told by the executable's name.
func identify(comm string, argv []string, exe string) string {
	base := comm
	if len(argv) > 0 {
		base = path.Base(argv[0])
	}
	arg1 := ""
	if len(argv) > 1 {
		arg1 = argv[1]
	}
	switch {
	case comm == "mariadbd" || base == "mariadbd":
		return snapshot.EngineMariaDB
	case comm == "mysqld":
		if t, err := os.Readlink(exe); err == nil && path.Base(t) == "mariadbd" {
			return snapshot.EngineMariaDB
		}
		return snapshot.EngineMySQL
	case comm == "postgres" || comm == "postmaster":
		return snapshot.EnginePostgreSQL
	case comm == "mongod":
		return snapshot.EngineMongoDB
	case base == "clickhouse-server", base == "clickhouse" && arg1 == "server":
		return snapshot.EngineClickHouse
	case comm == "cockroach" && slices.ContainsFunc(argv[min(1, len(argv)):], func(a string) bool { return a == "start" || a == "start-single-node" }):
		return snapshot.EngineCockroachDB
	}
	return ""
}

// readCmdline splits /proc/PID/cmdline at its NULs; a process that
// rewrote its arguments into one string with spaces (setproctitle) is
// split at spaces.
func readCmdline(p string) []string {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, maxCmdline)
	n, _ := f.Read(b)
	b = bytes.TrimRight(b[:n], "\x00")
	if len(b) == 0 {
		return nil
	}
	if bytes.IndexByte(b, 0) < 0 {
		return strings.Fields(string(b))
	}
	return strings.Split(string(b), "\x00")
}

// parentIsPostgres: every backend, checkpointer and walwriter is a child
// of the postmaster with the same comm (the postmaster forks, it does not
// exec: src/backend/postmaster/postmaster.c).
func parentIsPostgres(fs hostfs.FS, pid int) bool {
	ppid, err := sampler.ParentPID(fs, pid)
	if err != nil || ppid <= 0 {
		return false
	}
	comm, err := hostfs.ReadValue(fs.ProcPath(strconv.Itoa(ppid), "comm"))
	return err == nil && (comm == "postgres" || comm == "postmaster")
}

// containerID finds a 64-hex container id in a cgroup path, as Docker,
// containerd, CRI-O and Podman name their scopes and directories
// (docker-ID.scope, cri-containerd-ID.scope, crio-ID.scope,
// libpod-ID.scope, /docker/ID, /kubepods/.../ID).
var containerID = regexp.MustCompile(`(?:^|[/\-_:])([0-9a-f]{64})(?:\.scope)?(?:/|$)`)

// containerOf says how a process's root was told apart from the host's:
// its root (/proc/PID/root, stat'd through the magic link) is another
// directory than fs.Root. It is then named by the container id of its
// cgroup (the first 12 hex digits, as docker ps shows it) or, without
// one, "pid N root". Empty on the host.
func containerOf(fs hostfs.FS, pid int, root string) string {
	var st, host unix.Stat_t
	if unix.Stat(root, &st) != nil || unix.Stat(fs.Root, &host) != nil {
		return ""
	}
	if st.Dev == host.Dev && st.Ino == host.Ino {
		return ""
	}
	if b, err := os.ReadFile(fs.ProcPath(strconv.Itoa(pid), "cgroup")); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			// hierarchy-ID:controllers:path (cgroups(7)).
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			if m := containerID.FindStringSubmatch(parts[2]); m != nil {
				return m[1][:12]
			}
		}
	}
	return "pid " + strconv.Itoa(pid) + " root"
}
