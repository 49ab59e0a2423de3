package iotrace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"
	"github.com/google/go-cmp/cmp"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// TestPreadEvent traces this process's own pread64 and fsync of a file on
// the filesystem of a temporary directory.
func TestPreadEvent(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, make([]byte, 65536), 0o600); err != nil {
		t.Fatal(err)
	}
	// The tracer never traces its own process: the I/O is a child's,
	// which waits for a line on stdin.
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), "SLOWPATH_IOTRACE_CHILD="+p)
	in, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	tr, err := Start(Options{Major: unix.Major(st.Dev), Minor: unix.Minor(st.Dev), PID: uint32(child.Process.Pid)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	in.Write([]byte("go\n"))
	if err := child.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	tr.Detach()
	var got []Event
	for {
		var e Event
		err := tr.Read(&e, time.Now().Add(200*time.Millisecond))
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	var pread, open, fsync bool
	for _, e := range got {
		t.Logf("%+v", e)
		switch {
		case e.Kind == 1 && e.Offset == 8192 && e.Length == 4096 && e.Ret == 4096 && e.Flags == 1<<5:
			pread = true
		case e.Kind == 9 && e.Ret >= 0:
			open = true
		case e.Kind == 3:
			fsync = true
		}
	}
	if !pread || !open || !fsync {
		t.Errorf("pread %v, open %v, fsync %v among %d events", pread, open, fsync, len(got))
	}
}

// TestMain runs the child of TestPreadEvent when asked to: after a line on
// stdin it opens the file, preads a page at 8 KiB and fsyncs.
func TestMain(m *testing.M) {
	if p := os.Getenv("SLOWPATH_IOTRACE_CHILD"); p != "" {
		bufio.NewReader(os.Stdin).ReadString('\n')
		f, err := os.Open(p)
		if err == nil {
			_, err = f.ReadAt(make([]byte, 4096), 8192)
		}
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// kernelBTF builds a BTF blob with the block tracepoints' prototypes of one
// kernel generation and the request enums.
// param is an argument of type p.
func param(p *btf.Pointer) btf.FuncParam { return btf.FuncParam{Type: p} }

func kernelBTF(t *testing.T, oldBlock, filemapFault bool) *btf.Spec {
	t.Helper()
	voidp := &btf.Pointer{Target: (*btf.Void)(nil)}
	ptr := func(name string) btf.FuncParam {
		return btf.FuncParam{Type: &btf.Pointer{Target: &btf.Struct{Name: name}}}
	}
	ulong := btf.FuncParam{Type: &btf.Int{Name: "long unsigned int", Size: 8}}
	tp := func(name string, params ...btf.FuncParam) btf.Type {
		proto := &btf.FuncProto{Return: (*btf.Void)(nil), Params: append([]btf.FuncParam{{Name: "__data", Type: voidp}}, params...)}
		return &btf.Typedef{Name: "btf_trace_" + name, Type: &btf.Pointer{Target: proto}}
	}
	var types []btf.Type
	if oldBlock { // 5.10: (q, rq), (q, bio)
		types = append(types, tp("block_rq_issue", ptr("request_queue"), ptr("request")), tp("block_bio_queue", ptr("request_queue"), ptr("bio")))
	} else {
		types = append(types, tp("block_rq_issue", ptr("request")), tp("block_bio_queue", ptr("bio")))
	}
	types = append(types, tp("block_rq_complete", ptr("request"), ulong, ulong), tp("block_bio_complete", ptr("request_queue"), ptr("bio")),
		tp("page_fault_user", ulong, ptr("pt_regs"), ulong))
	if filemapFault {
		types = append(types, tp("mm_filemap_fault", ptr("address_space"), ulong))
	}
	// io_uring: 5.10 names no request; 6.1 passes it as void *, then
	// user_data and res; 6.4+ passes struct io_kiocb * and the CQE.
	u64 := btf.FuncParam{Type: &btf.Int{Name: "long long unsigned int", Size: 8}}
	switch {
	case oldBlock:
		types = append(types, tp("io_uring_submit_sqe", param(voidp), ulong, u64), tp("io_uring_complete", param(voidp), u64, ulong, ulong))
	case filemapFault:
		types = append(types, tp("io_uring_submit_req", ptr("io_kiocb")), tp("io_uring_complete", ptr("io_ring_ctx"), ptr("io_kiocb"), ptr("io_uring_cqe")))
	default:
		types = append(types, tp("io_uring_submit_sqe", ptr("io_kiocb"), btf.FuncParam{Type: &btf.Int{Name: "_Bool", Size: 1, Encoding: btf.Bool}}),
			tp("io_uring_complete", param(voidp), param(voidp), u64, ulong, ulong, u64, u64))
	}
	types = append(types,
		&btf.Enum{Name: "req_op", Size: 4, Values: []btf.EnumValue{{Name: "REQ_OP_READ", Value: 0}, {Name: "REQ_OP_WRITE", Value: 1},
			{Name: "REQ_OP_FLUSH", Value: 2}, {Name: "REQ_OP_DISCARD", Value: 3}, {Name: "REQ_OP_WRITE_ZEROES", Value: 9}}},
		&btf.Enum{Name: "req_flag_bits", Size: 4, Values: []btf.EnumValue{{Name: "__REQ_SYNC", Value: 11}, {Name: "__REQ_META", Value: 12},
			{Name: "__REQ_FUA", Value: 17}, {Name: "__REQ_PREFLUSH", Value: 18}, {Name: "__REQ_RAHEAD", Value: 19}}})
	b, err := btf.NewBuilder(types, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestProbeSpec reads the block tracepoints' generations and the fault
// source from BTF alone.
func TestProbeSpec(t *testing.T) {
	req := ReqBits{Read: 0, Write: 1, Flush: 2, Discard: 3, WriteZeroes: 9, Sync: 1 << 11, FUA: 1 << 17, Preflush: 1 << 18, Meta: 1 << 12, Rahead: 1 << 19}
	for _, tc := range []struct {
		name       string
		old, fault bool
		want       Kernel
	}{
		{"5.10 (q, rq)", true, false, Kernel{RqArg: 1, BioArg: 1, HasPageFaultUser: true, Req: req}},
		{"6.1 (rq)", false, false, Kernel{HasPageFaultUser: true, HasURing: true, URingSubmit: "io_uring_submit_sqe", Req: req}},
		{"6.17 mm_filemap_fault", false, true, Kernel{HasFilemapFault: true, HasPageFaultUser: true, HasURing: true, URingSubmit: "io_uring_submit_req", Req: req}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := probeSpec(kernelBTF(t, tc.old, tc.fault))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	// A kernel without the block tracepoints is refused by name.
	b, _ := btf.NewBuilder([]btf.Type{&btf.Int{Name: "int", Size: 4}}, nil)
	raw, _ := b.Marshal(nil, nil)
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := probeSpec(spec); err == nil || !strings.Contains(err.Error(), "block:block_rq_issue not in the kernel's BTF") {
		t.Errorf("no tracepoints: %v", err)
	}
}

// TestReadFormat parses a tracefs format file.
func TestReadFormat(t *testing.T) {
	p := filepath.Join(t.TempDir(), "format")
	os.WriteFile(p, []byte(`name: sys_enter_pread64
ID: 838
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:unsigned int fd;	offset:16;	size:8;	signed:0;
	field:char * buf;	offset:24;	size:8;	signed:0;

print fmt: "fd: 0x%08lx"
`), 0o644)
	got, err := readFormat(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []formatField{{"common_type", 0, 2}, {"__syscall_nr", 8, 4}, {"fd", 16, 8}, {"buf", 24, 8}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(formatField{})); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	os.WriteFile(p, []byte("format:\n\tfield:int x;\toffset:abc;\tsize:4;\n"), 0o644)
	if _, err := readFormat(p); err == nil {
		t.Error("offset abc accepted")
	}
}
