package fio

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestCheckJobFile(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		want       string // "" = accepted; else in the error
	}{
		// Accepted: relative paths, lists, logs, formats, allowed engines.
		{"plain", "[a]\nrw=randread\nbs=4k\nsize=8m\nioengine=libaio\niodepth=8\n", ""},
		{"relative list", "[global]\ndirectory=d1:d2\n[a]\nfilename=x:sub/y:z\\:colon\n", ""},
		{"dotdot inside", "[a]\nfilename=sub/../x\n", ""},
		{"bare log", "[a]\nwrite_bw_log\nwrite_lat_log=lat\nwrite_iops_log=\n", ""},
		{"format", "[a]\nfilename_format=files/$jobname.$jobnum.$filenum\n", ""},
		{"mem file", "[a]\nmem=mmap:buffers\niomem=malloc\n", ""},
		{"pattern", "[a]\nbuffer_pattern=0xdeadbeef\nverify_pattern=\"str'ing\"\nbuffer_pattern='seed'\n", ""},
		{"comment cut", "; header\n# more\n[a] ; the job\nrw=write ; a comment\nfilename=x # another\n", ""},
		{"engine comment", "[a]\nioengine=psync ; plain reads\nname=job # the job\n", ""},
		{"alias", "[a]\nreadwrite=write\nblocksize=8k\ntimeout=10\n", ""},
		{"engine options", "[a]\nioengine=io_uring\nfixedbufs\nsqthread_poll=1\n", ""},
		{"stdin", "[a]\nfilename=-\n", ""},
		// Paths that leave the directory.
		{"colon list", "[a]\nfilename=a:/tmp/elsewhere/x.dat\n", `filename="a:/tmp/elsewhere/x.dat": /tmp/elsewhere/x.dat: an absolute path`},
		{"absolute", "[a]\nfilename=/dev/sda\n", "/dev/sda: an absolute path"},
		{"dotdot", "[a]\nfilename=../x\n", "../x: leaves the run's directory"},
		{"dotdot deep", "[a]\nfilename=a/../../x\n", "leaves the run's directory"},
		{"escaped colon abs", "[a]\nfilename=a\\:b:/etc/x\n", "/etc/x: an absolute path"},
		{"directory", "[global]\ndirectory=/etc\n[a]\n", "section [global]: directory=\"/etc\""},
		{"directory list", "[a]\ndirectory=ok:..\n", "leaves"},
		{"opendir", "[a]\nopendir=/\n", "opendir"},
		{"bw log", "[a]\nwrite_bw_log=/tmp/x\n", "write_bw_log"},
		{"lat log", "[a]\nwrite_lat_log=../x\n", "write_lat_log"},
		{"iops log", "[a]\nwrite_iops_log=/x\n", "write_iops_log"},
		{"hist log", "[a]\nwrite_hist_log=/x\n", "write_hist_log"},
		{"iolog", "[a]\nwrite_iolog=/x\n", "write_iolog"},
		{"format abs", "[a]\nfilename_format=/tmp/$jobname\n", "filename_format"},
		{"format dotdot", "[a]\nfilename_format=../$jobname\n", "filename_format"},
		{"mem abs", "[a]\nmem=mmaphuge:/hugetlbfs/x\n", "mem="},
		{"iomem alias", "[a]\niomem=mmap:../x\n", "iomem="},
		{"mem bad type", "[a]\nmem=cudamalloc\n", "use malloc"},
		{"pattern file", "[a]\nbuffer_pattern='/etc/shadow'\n", "the pattern reads file /etc/shadow"},
		{"pattern unterminated", "[a]\nverify_pattern='x\n", "unterminated"},
		{"comment hides nothing", "[a]\nfilename=a#:/etc/x\n", "/etc/x"},
		// Programs and code.
		{"exec_prerun", "[a]\nexec_prerun=touch /tmp/pwned\n", "exec_prerun=\"touch /tmp/pwned\": runs a program"},
		{"exec_postrun", "[a]\nexec_postrun=reboot\n", "runs a program"},
		{"exec engine", "[a]\nioengine=exec\n", "engine exec runs a program"},
		{"external", "[a]\nioengine=external:/tmp/evil.so\n", "loads an external engine"},
		{"unknown engine", "[a]\nioengine=/tmp/evil.so\n", "unknown engine"},
		// Network.
		{"net", "[a]\nioengine=net\n", "sends network traffic"},
		{"netsplice", "[a]\nioengine=netsplice\n", "sends network traffic"},
		{"rbd", "[a]\nioengine=rbd\n", "Ceph"},
		{"http", "[a]\nioengine=http\n", "HTTP"},
		{"nbd", "[a]\nioengine=nbd\n", "NBD"},
		{"rdma", "[a]\nioengine=rdma\n", "network"},
		{"net option", "[a]\nhostname=10.0.0.1\n", "hostname=\"10.0.0.1\": not an fio 3.33 option"},
		// Devices and system state.
		{"ioscheduler", "[a]\nioscheduler=none\n", "ioscheduler"},
		{"cgroup", "[a]\ncgroup=x\n", "cgroup"},
		{"cgroup_weight", "[a]\ncgroup_weight=100\n", "cgroup_weight"},
		{"cgroup_nodelete", "[a]\ncgroup_nodelete=1\n", "cgroup_nodelete"},
		{"sg", "[a]\nioengine=sg\n", "SCSI"},
		{"replay_redirect", "[a]\nreplay_redirect=/dev/sda\n", "replay_redirect"},
		{"read_iolog", "[a]\nread_iolog=trace.log\n", "replays I/O onto the files or devices named inside the log"},
		{"merge_blktrace_file", "[a]\nmerge_blktrace_file=m\n", "merge_blktrace_file"},
		{"allow_mounted_write", "[a]\nallow_mounted_write=1\n", "allow_mounted_write"},
		{"profile", "[a]\nprofile=act\n", "profile"},
		// Directives and the file's shape.
		{"include", "[a]\ninclude other.fio\n", "include directives are not allowed"},
		{"include global", "include /etc/x.fio\n[a]\n", "include"},
		{"env", "[a]\nfilename=${HOME}/x\n", "environment expansion"},
		{"env in other", "[a]\nsize=${SIZE}\n", "environment expansion"},
		{"unknown", "[a]\nfoo=bar\n", "foo=\"bar\": not an fio 3.33 option"},
		{"before section", "rw=read\n[a]\n", "option before the first [section]"},
		{"no section", "; nothing\n", "no [section]"},
		{"section slash", "[../x]\nrw=read\n", "fio job name \"../x\""},
		{"section dotdot", "[..]\nrw=read\n", "starting with a letter or digit"},
		{"section underscore", "[_x]\nrw=read\n", "starting with a letter or digit"},
		{"name dotdot", "[a]\nname=..\n", "name=\"..\""},
		{"name slash", "[a]\nname=x/y\n", "name="},
		{"header", "[a\n", "does not end with ']'"},
		{"header comment", "[a;b]\n", "does not end with ']'"},
		{"control", "[a]\nfilename=x\x00/etc/y\n", "control character"},
		{"long line", "[a]\ndescription=" + strings.Repeat("x", 5000) + "\n", "longer than 4095 bytes"},
		{"comment in key", "[a]\nfile;name=x\n", "comment character"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CheckJobFile([]byte(tt.file), "")
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("accepted, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q, want %q", err, tt.want)
			case err != nil && !errors.Is(err, ErrJobFile):
				t.Errorf("error %v does not wrap ErrJobFile", err)
			}
		})
	}
}

// TestCheckJobFileSymlink: a path through an existing symbolic link in
// the run's directory is refused; the same path without the link passes.
func TestCheckJobFileSymlink(t *testing.T) {
	dir := t.TempDir()
	jf := []byte("[a]\nfilename=out/x.dat\n")
	if _, err := CheckJobFile(jf, dir); err != nil {
		t.Fatalf("no link: %v", err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckJobFile(jf, dir); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("through a link: %v", err)
	}
}

// TestOptionTableComplete: every option of fio 3.33's --cmdhelp=all is
// classified (the table is the documented one, docs/bench.md).
func TestOptionTableComplete(t *testing.T) {
	all := strings.Fields(`description name wait_for filename lockfile directory filename_format unique_filename opendir rw bs ba
bsrange bssplit bs_unaligned randrepeat randseed norandommap ignore_error rw_sequencer ioengine iodepth iodepth_batch
iodepth_batch_complete_min iodepth_batch_complete_max iodepth_low serialize_overlap io_submit_mode size io_size fill_device
filesize file_append offset offset_increment offset_align number_ios random_generator random_distribution percentage_random
allrandrepeat nrfiles file_service_type openfiles fallocate fadvise_hint fsync fdatasync write_barrier sync_file_range direct
atomic buffered overwrite loops numjobs startdelay runtime time_based verify_only ramp_time clocksource mem verify do_verify
verify_interval verify_offset verify_pattern verify_fatal verify_dump verify_async verify_backlog verify_backlog_batch
experimental_verify verify_state_load verify_state_save trim_percentage trim_verify_zero trim_backlog trim_backlog_batch
write_iolog read_iolog read_iolog_chunked replay_no_stall replay_redirect replay_scale replay_align replay_time_scale
replay_skip merge_blktrace_file merge_blktrace_scalars merge_blktrace_iters exec_prerun exec_postrun ioscheduler zonemode
zonesize zonecapacity zonerange zoneskip read_beyond_wp max_open_zones job_max_open_zones ignore_zone_limits
zone_reset_threshold zone_reset_frequency lockmem rwmixread rwmixwrite nice prio prioclass thinktime thinktime_spin
thinktime_blocks thinktime_blocks_type thinktime_iotime rate rate_min rate_process rate_cycle rate_ignore_thinktime rate_iops
rate_iops_min max_latency latency_target latency_window latency_percentile latency_run invalidate sync write_hint
create_serialize create_fsync create_on_open create_only allow_file_create allow_mounted_write pre_read cpumask cpus_allowed
cpus_allowed_policy numa_cpu_nodes numa_mem_policy end_fsync fsync_on_close unlink unlink_each_loop exitall exit_what
exitall_on_error stonewall new_group thread per_job_logs write_bw_log bwavgtime write_lat_log write_iops_log iopsavgtime
log_entries log_avg_msec log_hist_msec log_hist_coarseness write_hist_log log_max_value log_offset log_prio log_compression
log_compression_cpus log_store_compressed log_unix_epoch log_alternate_epoch log_alternate_epoch_clock_id
block_error_percentiles group_reporting stats zero_buffers refill_buffers scramble_buffers buffer_pattern
buffer_compress_percentage buffer_compress_chunk dedupe_percentage dedupe_mode dedupe_working_set_percentage dedupe_global
clat_percentiles lat_percentiles slat_percentiles percentile_list significant_figures disk_util gtod_reduce disable_lat
disable_clat disable_slat disable_bw_measurement gtod_cpu unified_rw_reporting continue_on_error error_dump profile cgroup
cgroup_nodelete cgroup_weight uid gid kb_base unit_base hugepage-size flow_id flow flow_sleep steadystate
steadystate_duration steadystate_ramp_time`)
	if len(all) != 217 {
		t.Fatalf("list has %d options", len(all))
	}
	for _, o := range all {
		if _, ok := options[o]; !ok {
			t.Errorf("option %s is not classified", o)
		}
	}
	for a, o := range aliases {
		if _, ok := options[o]; !ok {
			t.Errorf("alias %s of unknown %s", a, o)
		}
	}
}

// The fuzz oracle re-reads an accepted job file on its own terms and
// resolves every path-valued option against a directory: whatever the
// checker accepts, every path stays inside it, and nothing refused by
// class (programs, devices, network, includes, ${VAR}) is present.
var (
	oraclePathKeys = map[string]string{"filename": "list", "directory": "list", "opendir": "one", "write_iolog": "one",
		"write_bw_log": "one", "write_lat_log": "one", "write_iops_log": "one", "write_hist_log": "one",
		"filename_format": "one", "mem": "mem", "iomem": "mem", "buffer_pattern": "pattern", "verify_pattern": "pattern"}
	oracleNever = []string{"exec_prerun", "exec_postrun", "ioscheduler", "cgroup", "cgroup_nodelete", "cgroup_weight",
		"replay_redirect", "read_iolog", "merge_blktrace_file", "profile", "allow_mounted_write"}
	oracleEngines = map[string]bool{"sync": true, "psync": true, "vsync": true, "pvsync": true, "pvsync2": true, "libaio": true,
		"io_uring": true, "posixaio": true, "mmap": true, "null": true, "cpuio": true, "falloc": true, "ftruncate": true,
		"filecreate": true, "filestat": true, "filedelete": true, "splice": true}
	oraclePattern = regexp.MustCompile(`"[^"]*"|'([^']*)'`)
)

func oracleInside(t *testing.T, key, p string) {
	const root = "/run/slowpath-oracle"
	j := filepath.Join(root, p)
	if p == "" || filepath.IsAbs(p) || (j != root && !strings.HasPrefix(j, root+"/")) {
		t.Fatalf("accepted %s path %q resolves to %s, outside %s", key, p, j, root)
	}
}

func oracle(t *testing.T, b []byte) {
	for _, line := range strings.Split(string(b), "\n") {
		p := strings.TrimSpace(line)
		if strings.ContainsRune(p, 0) {
			t.Fatalf("accepted a line with NUL: %q", p)
		}
		if p == "" || p[0] == ';' || p[0] == '#' {
			continue
		}
		if strings.HasPrefix(p, "include") || strings.Contains(p, "${") {
			t.Fatalf("accepted %q", p)
		}
		if p[0] == '[' {
			if i := strings.IndexAny(p, ";#"); i >= 0 {
				p = strings.TrimSpace(p[:i])
			}
			name := strings.TrimSuffix(p[1:], "]")
			if strings.Contains(name, "/") || name == "." || name == ".." {
				t.Fatalf("accepted section [%s]", name)
			}
			continue
		}
		// Both fio's reading (comments cut) and the whole line.
		cut := p
		if i := strings.IndexAny(cut, ";"); i >= 0 {
			cut = cut[:i]
		}
		if i := strings.IndexAny(cut, "#"); i >= 0 {
			cut = cut[:i]
		}
		for li, l := range []string{cut, p} {
			k, v, _ := strings.Cut(l, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if li == 1 && (k == "ioengine" || k == "name") {
				continue // names and engines: fio 3.33's reading only
			}
			for _, n := range oracleNever {
				if k == n {
					t.Fatalf("accepted %s", l)
				}
			}
			if k == "ioengine" && !oracleEngines[v] {
				t.Fatalf("accepted engine %q", v)
			}
			if k == "name" && (strings.Contains(v, "/") || v == "." || v == "..") {
				t.Fatalf("accepted name %q", v)
			}
			switch oraclePathKeys[k] {
			case "one":
				if v != "" {
					oracleInside(t, k, v)
				}
			case "list":
				for _, e := range strings.Split(strings.ReplaceAll(v, `\:`, "\x00"), ":") {
					oracleInside(t, k, strings.ReplaceAll(e, "\x00", ":"))
				}
			case "mem":
				if _, f, ok := strings.Cut(v, ":"); ok {
					oracleInside(t, k, f)
				}
			case "pattern":
				for _, m := range oraclePattern.FindAllStringSubmatch(v, -1) {
					if strings.HasPrefix(m[0], "'") {
						oracleInside(t, k, m[1])
					}
				}
			}
		}
	}
}

func FuzzCheckJobFile(f *testing.F) {
	for _, s := range []string{
		"[a]\nfilename=a:/tmp/elsewhere/x.dat\n",
		"[global]\ndirectory=d1:d2\n[a]\nfilename=x:sub/y:z\\:colon\nwrite_bw_log=bw\n",
		"[a]\nfilename_format=$jobname/../$filenum\nmem=mmap:buf\nbuffer_pattern='seed'\"x\"\n",
		"[a]\nfilename=a;/b\nfilename=a#:/b\ninclude x\n",
		"[a]\nioengine=libaio\nexec_prerun=x\n",
		"[a]\nioengine=psync ; c\nname=j # c\n",
		"[a]\niomem=mmaphuge:/x\n",
		"[..]\nname=x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		secs, err := CheckJobFile(b, "")
		if err != nil {
			var je *JobFileError
			if !errors.As(err, &je) || je.Reason == "" {
				t.Fatalf("error %v is not a *JobFileError with a reason", err)
			}
			return
		}
		if len(secs) == 0 {
			t.Fatal("accepted with no section")
		}
		oracle(t, b)
	})
}
