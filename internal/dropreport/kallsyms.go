package dropreport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Symbol is one text symbol of the kernel or a module.
type Symbol struct {
	Addr   uint64 `json:"addr"`
	Name   string `json:"name"`
	Module string `json:"module,omitempty"` // empty for the kernel image
}

// Symbols is a kernel symbol table sorted by address, for turning drop
// locations and stack frames into function names.
type Symbols struct {
	syms []Symbol
}

// ErrKallsymsRestricted is returned when /proc/kallsyms shows every
// address as zero (kernel.kptr_restrict, or a reader without CAP_SYSLOG).
var ErrKallsymsRestricted = errors.New("/proc/kallsyms hides addresses: run as root (CAP_SYSLOG) or lower kernel.kptr_restrict")

// ParseKallsyms reads /proc/kallsyms, one symbol per line:
//
//	ffffffff81000000 T _stext
//	ffffffffc0a01010 t veth_xmit	[veth]
//
// (kernel/kallsyms.c s_show). Only text symbols (t, T, w, W) are kept:
// drop locations and stack frames are code addresses.
func ParseKallsyms(r io.Reader) (*Symbols, error) {
	var (
		s       Symbols
		nonzero bool
		line    int
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 || len(f) > 4 {
			return nil, fmt.Errorf("kallsyms line %d: want 3 or 4 fields, got %d: %q", line, len(f), sc.Text())
		}
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("kallsyms line %d: address %q: %w", line, f[0], err)
		}
		if len(f[1]) != 1 {
			return nil, fmt.Errorf("kallsyms line %d: type %q is not one letter", line, f[1])
		}
		if addr != 0 {
			nonzero = true
		}
		switch f[1][0] {
		case 't', 'T', 'w', 'W':
		default:
			continue
		}
		sym := Symbol{Addr: addr, Name: f[2]}
		if len(f) == 4 {
			m := f[3]
			if len(m) < 3 || m[0] != '[' || m[len(m)-1] != ']' {
				return nil, fmt.Errorf("kallsyms line %d: module %q not in brackets", line, m)
			}
			sym.Module = m[1 : len(m)-1]
		}
		s.syms = append(s.syms, sym)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read kallsyms: %w", err)
	}
	if line > 0 && !nonzero {
		return nil, ErrKallsymsRestricted
	}
	sortSymbols(s.syms)
	return &s, nil
}

// NewSymbols builds a table from symbols in any order (for tests and
// recorded captures).
func NewSymbols(syms []Symbol) *Symbols {
	s := &Symbols{syms: append([]Symbol(nil), syms...)}
	sortSymbols(s.syms)
	return s
}

// Len is the number of text symbols.
func (s *Symbols) Len() int { return len(s.syms) }

// Lookup returns the symbol containing addr and the offset into it. With
// no table, or below the first symbol, ok is false.
func (s *Symbols) Lookup(addr uint64) (sym Symbol, off uint64, ok bool) {
	if s == nil || len(s.syms) == 0 {
		return Symbol{}, 0, false
	}
	i := sort.Search(len(s.syms), func(i int) bool { return s.syms[i].Addr > addr })
	if i == 0 {
		return Symbol{}, 0, false
	}
	// Of several symbols at the same address, prefer the first listed.
	j := i - 1
	for j > 0 && s.syms[j-1].Addr == s.syms[j].Addr {
		j--
	}
	if addr-s.syms[j].Addr > maxSymbolSize {
		// Past the end of the last symbol (BPF programs, unlisted code).
		return Symbol{}, 0, false
	}
	return s.syms[j], addr - s.syms[j].Addr, true
}

// maxSymbolSize bounds how far past a symbol's start an address may be
// and still belong to it: kallsyms has no sizes, and kernel functions are
// far smaller than this.
const maxSymbolSize = 1 << 20

// ReturnSite symbolises a return address: the call is the instruction
// before it, which matters when a call to a noreturn function is the last
// instruction of a function. The offset is still that of addr, as perf
// and the kernel's %pS print it.
func (s *Symbols) ReturnSite(addr uint64) (name string, off uint64, ok bool) {
	if addr == 0 {
		return "", 0, false
	}
	sym, _, ok := s.Lookup(addr - 1)
	if !ok {
		return "", 0, false
	}
	return sym.Name, addr - sym.Addr, true
}

// FuncName is ReturnSite's name, or the address in hex when unknown.
func (s *Symbols) FuncName(addr uint64) string {
	if n, _, ok := s.ReturnSite(addr); ok {
		return n
	}
	return fmt.Sprintf("0x%x", addr)
}

// sortSymbols orders by address, stably, so that of aliases at one address
// the first listed wins.
func sortSymbols(syms []Symbol) {
	sort.SliceStable(syms, func(i, j int) bool { return syms[i].Addr < syms[j].Addr })
}
