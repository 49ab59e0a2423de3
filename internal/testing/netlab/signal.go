package netlab

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// While a lab is open, SIGINT and SIGTERM (Ctrl-C in `go test`, a CI job
// cancelled) close every open lab of the process before it dies as it would
// have: otherwise the backlog sysctl would stay changed until the next lab.
// SIGKILL and `go test -timeout` panics cannot be caught; the next Setup
// cleans up after those from the state files.
var open struct {
	sync.Mutex
	labs map[*Lab]struct{}
	sigs chan os.Signal
}

func trackOpen(l *Lab) {
	open.Lock()
	defer open.Unlock()
	if open.labs == nil {
		open.labs = map[*Lab]struct{}{}
	}
	open.labs[l] = struct{}{}
	if open.sigs == nil {
		open.sigs = make(chan os.Signal, 1)
		signal.Notify(open.sigs, syscall.SIGINT, syscall.SIGTERM)
		go closeOnSignal(open.sigs)
	}
}

func untrackOpen(l *Lab) {
	open.Lock()
	defer open.Unlock()
	delete(open.labs, l)
	if len(open.labs) == 0 && open.sigs != nil {
		signal.Stop(open.sigs)
		close(open.sigs)
		open.sigs = nil
	}
}

func closeOnSignal(sigs chan os.Signal) {
	sig, ok := <-sigs
	if !ok {
		return
	}
	open.Lock()
	labs := make([]*Lab, 0, len(open.labs))
	for l := range open.labs {
		labs = append(labs, l)
	}
	open.Unlock()
	for _, l := range labs {
		err := l.Close()
		fmt.Fprintf(os.Stderr, "netlab: %v: closed lab %s (error: %v)\n", sig, l.ID, err)
	}
	// Die of the signal, as without us.
	signal.Reset(sig)
	if s, ok := sig.(syscall.Signal); ok {
		_ = syscall.Kill(os.Getpid(), s)
		// Delivery is asynchronous; give it time before the fallback.
		time.Sleep(2 * time.Second)
	}
	os.Exit(1)
}
