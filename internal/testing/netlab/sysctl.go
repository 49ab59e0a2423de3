package netlab

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// BacklogSysctl is net.core.netdev_max_backlog: the length of each CPU's
// input queue (softnet_data.input_pkt_queue). It is global, not per network
// namespace. See Documentation/admin-guide/sysctl/net.rst.
const BacklogSysctl = "/proc/sys/net/core/netdev_max_backlog"

// SetBacklog sets net.core.netdev_max_backlog to n. The value first seen is
// remembered (also on disk, for a process killed before Close) and restored
// by Close.
func (l *Lab) SetBacklog(n int) error {
	if n <= 0 {
		return fmt.Errorf("netdev_max_backlog must be positive, got %d", n)
	}
	return l.setSysctl(BacklogSysctl, strconv.Itoa(n))
}

// Backlog reads the current net.core.netdev_max_backlog.
func Backlog() (int, error) {
	v, err := readSysctl(BacklogSysctl)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("parse %s %q: %w", BacklogSysctl, v, err)
	}
	return n, nil
}

func (l *Lab) setSysctl(path, value string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("netlab: lab is closed")
	}
	if _, seen := l.sysctls[path]; !seen {
		orig, err := readSysctl(path)
		if err != nil {
			return err
		}
		l.sysctls[path] = orig
		// Saved before the write: a crash right after it still restores.
		if err := l.state.save(l.namespaces, l.sysctls); err != nil {
			delete(l.sysctls, path)
			return err
		}
	}
	return writeSysctl(path, value)
}

func readSysctl(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func writeSysctl(path, value string) error {
	if err := os.WriteFile(path, []byte(value+"\n"), 0); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
