package network

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// interruptLine is one numbered line of /proc/interrupts.
type interruptLine struct {
	Number int
	// Chip is the text between the per-CPU counts and the action names
	// (controller, hardware IRQ, trigger), which names the PCI device for
	// MSI-X vectors ("PCI-MSIX-0000:00:03.0 1-edge").
	Chip string
	// Actions are the handler names, e.g. "virtio0-input.0" or
	// "mlx5_comp3@pci:0002:00:02.0".
	Actions string
}

// readInterrupts reads /proc/interrupts (Documentation/filesystems/proc.rst,
// kernel/irq/proc.c show_interrupts).
func readInterrupts(f hostfs.FS) ([]interruptLine, error) {
	b, err := os.ReadFile(f.ProcPath("interrupts"))
	if err != nil {
		return nil, err
	}
	lines, err := parseInterrupts(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.ProcPath("interrupts"), err)
	}
	return lines, nil
}

// parseInterrupts keeps numbered IRQs; architecture lines (NMI, LOC, ...)
// are not device interrupts.
func parseInterrupts(r io.Reader) ([]interruptLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	if !sc.Scan() {
		return nil, fmt.Errorf("empty file")
	}
	ncpu := len(strings.Fields(sc.Text()))
	if ncpu == 0 || !strings.HasPrefix(strings.TrimSpace(sc.Text()), "CPU") {
		return nil, fmt.Errorf("no CPU header line")
	}
	var out []interruptLine
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(fields[0], ":"))
		if err != nil || !strings.HasSuffix(fields[0], ":") {
			continue
		}
		rest := fields[1:]
		if len(rest) < ncpu {
			// An IRQ without actions prints counts only, sometimes fewer.
			continue
		}
		rest = rest[ncpu:]
		// The trigger token ("edge", "1-edge", "level") ends the chip part.
		cut := -1
		for i, w := range rest {
			if strings.HasSuffix(w, "edge") || strings.HasSuffix(w, "level") {
				cut = i
			}
		}
		il := interruptLine{Number: n}
		switch {
		case cut >= 0:
			il.Chip = strings.Join(rest[:cut+1], " ")
			il.Actions = strings.Join(rest[cut+1:], " ")
		case len(rest) > 0:
			il.Chip = strings.Join(rest[:len(rest)-1], " ")
			il.Actions = rest[len(rest)-1]
		}
		out = append(out, il)
	}
	return out, sc.Err()
}

// interfaceIRQs picks the IRQs whose action names start with the interface
// name (eth0-TxRx-0, ens5-Tx-Rx-0) or mention its bus address
// (mlx5_comp0@pci:0000:00:08.0, PCI-MSIX-0000:00:03.0), and reads their
// affinity from /proc/irq/N/smp_affinity_list.
func interfaceIRQs(f hostfs.FS, lines []interruptLine, ifname, bus string) []snapshot.IRQ {
	var out []snapshot.IRQ
	for _, l := range lines {
		if !irqMatches(l, ifname, bus) {
			continue
		}
		irq := snapshot.IRQ{Number: l.Number, Name: l.Actions}
		irq.AffinityList, _ = hostfs.ReadValue(f.ProcPath("irq", strconv.Itoa(l.Number), "smp_affinity_list"))
		out = append(out, irq)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

func irqMatches(l interruptLine, ifname, bus string) bool {
	if bus != "" && strings.Count(bus, ":") >= 2 && // a PCI address, not "virtio0" or "N/A"
		(strings.Contains(l.Actions, bus) || strings.Contains(l.Chip, bus)) {
		return true
	}
	for _, a := range strings.FieldsFunc(l.Actions, func(r rune) bool { return r == ',' || r == ' ' }) {
		if a == ifname || strings.HasPrefix(a, ifname+"-") || strings.HasPrefix(a, ifname+"@") {
			return true
		}
	}
	return false
}
