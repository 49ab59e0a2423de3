package fio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A user's job file (bench fio:FILE) is someone else's data run as root:
// CheckJobFile reads it the way fio 3.33 does (init.c parse_jobs_ini,
// parse.c strip_blank_end) and refuses every option that could act outside
// the directory fio runs in. docs/bench.md has the table of options by
// class; optionClasses below is the same table.

// JobFileError says which line, section and option a job file is refused
// for, and why.
type JobFileError struct {
	Line    int
	Section string // "" before the first section
	Option  string // "" for a line that is not an option
	Value   string
	Reason  string
}

func (e *JobFileError) Error() string {
	where := fmt.Sprintf("line %d", e.Line)
	if e.Section != "" {
		where += fmt.Sprintf(", section [%s]", e.Section)
	}
	if e.Option != "" {
		return fmt.Sprintf("fio job file %s: %s=%q: %s", where, e.Option, e.Value, e.Reason)
	}
	return fmt.Sprintf("fio job file %s: %s", where, e.Reason)
}

// ErrJobFile is wrapped by every *JobFileError (errors.Is).
var ErrJobFile = errors.New("fio job file refused")

func (e *JobFileError) Unwrap() error { return ErrJobFile }

// ParsedOption is one option line as fio sees it: the name after aliases,
// the value after fio's comment stripping, and the value as written up to
// the end of the line.
type ParsedOption struct {
	Line   int
	Key    string // canonical name (alias resolved)
	Given  string // the name as written
	Value  string // after fio cuts the line at ';' or '#'
	Raw    string // the whole value up to the end of the line
	HasVal bool
}

// ParsedSection is one [name] of a user's job file.
type ParsedSection struct {
	Name    string
	Line    int
	Options []ParsedOption
}

// maxLine is the longest line accepted. fio reads lines with fgets into an
// 8 KiB buffer (init.c, OPT_LEN_MAX): a longer line's tail would be read
// as a line of its own, which a checker that sees whole lines would miss.
const maxLine = 4095

// ParseJobFile splits a job file into sections and options, refusing what
// fio would read differently from a plain line reader (over-long lines,
// control characters) and the two directives that bring in text the file
// does not hold: `include FILE` and ${VAR} environment expansion.
func ParseJobFile(b []byte) ([]ParsedSection, error) {
	var out []ParsedSection
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		n := i + 1
		sec := ""
		if len(out) > 0 {
			sec = out[len(out)-1].Name
		}
		bad := func(reason string) error { return &JobFileError{Line: n, Section: sec, Reason: reason} }
		if len(line) > maxLine {
			return nil, bad(fmt.Sprintf("line longer than %d bytes (fio would read its tail as a line of its own)", maxLine))
		}
		line = strings.TrimSuffix(line, "\r")
		if strings.ContainsFunc(line, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
			return nil, bad("control character in the line: remove it")
		}
		p := strings.TrimSpace(line)
		if p == "" || p[0] == ';' || p[0] == '#' {
			continue
		}
		// fio expands ${VAR} from its environment anywhere in a value
		// (init.c, option_dup): what the file says is not what fio runs.
		if strings.Contains(p, "${") {
			return nil, bad("${...} environment expansion is not allowed: write the value itself")
		}
		// fio treats any line starting with "include" as the directive
		// (init.c: strncmp(p, "include", 7)).
		if strings.HasPrefix(p, "include") {
			return nil, bad("include directives are not allowed: paste the included options into the job file")
		}
		if p[0] == '[' {
			// fio cuts a header line's comment too (strip_blank_end).
			if j := strings.IndexAny(p, ";#"); j >= 0 {
				p = strings.TrimSpace(p[:j])
			}
			if !strings.HasSuffix(p, "]") {
				return nil, bad(fmt.Sprintf("section header %q does not end with ']'", p))
			}
			name := p[1 : len(p)-1]
			if err := jobName(name); err != nil {
				return nil, &JobFileError{Line: n, Section: name, Reason: err.Error()}
			}
			out = append(out, ParsedSection{Name: name, Line: n})
			continue
		}
		if len(out) == 0 {
			return nil, bad("option before the first [section]")
		}
		k, v, hasVal := strings.Cut(p, "=")
		raw := strings.TrimSpace(v)
		// fio's strip_blank_end cuts the line at the first ';' and then at
		// the first '#': both start a comment anywhere in a line.
		cut := p
		if j := strings.IndexByte(cut, ';'); j >= 0 {
			cut = cut[:j]
		}
		if j := strings.IndexByte(cut, '#'); j >= 0 {
			cut = cut[:j]
		}
		ck, cv, _ := strings.Cut(cut, "=")
		k, ck = strings.TrimSpace(k), strings.TrimSpace(ck)
		if k != ck {
			// A comment character in the option's name.
			return nil, bad(fmt.Sprintf("option name %q holds a comment character", k))
		}
		if k == "" {
			return nil, bad("option without a name")
		}
		key := k
		if c, ok := aliases[k]; ok {
			key = c
		}
		o := ParsedOption{Line: n, Key: key, Given: k, Value: strings.TrimSpace(cv), Raw: raw, HasVal: hasVal}
		out[len(out)-1].Options = append(out[len(out)-1].Options, o)
	}
	if len(out) == 0 {
		return nil, &JobFileError{Line: len(lines), Reason: "no [section]: the job file defines no job"}
	}
	return out, nil
}

// jobName checks a section name or name= value: fio names a job's files
// and logs after it ($jobname.$jobnum.$filenum), so it must be one safe
// path component (never . or ..); it also names the result's streams,
// whose labels start with a letter or digit (benchresult.ValidLabel).
func jobName(n string) error {
	if err := validName(n); err != nil || len(n) > 64 || !isAlnum(n[0]) {
		return fmt.Errorf("fio job name %q: 1-64 letters, digits, '_', '.', '-', starting with a letter or digit", n)
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// class is how an option is checked.
type class int

const (
	plain          class = iota // no file, program, device or network
	pathOne                     // one path
	pathList                    // ':'-separated paths, '\:' escapes a colon
	pathLog                     // a log prefix; bare = the job's name
	pathFormat                  // filename_format: a path template
	patternOpt                  // buffer_pattern, verify_pattern: 'FILE' reads a file
	memOpt                      // mem=TYPE[:FILE]
	engineOpt                   // ioengine
	nameOpt                     // name=
	refuseProgram               // runs a program or loads code
	refuseDevice                // touches devices or system state
	refuseIndirect              // reads file names from another file
)

// options is fio 3.33's `fio --cmdhelp=all` plus the engine options of the
// engines allowed below (`fio --enghelp=ENGINE`), each with its class.
// An option that is not here is refused: it is either a typo (fio would
// stop on it too) or an option of an engine slowpath does not allow, and a
// checker that passes what it does not know confines nothing.
var options = map[string]class{
	"filename": pathList, "directory": pathList, "filename_format": pathFormat, "opendir": pathOne,
	"write_bw_log": pathLog, "write_lat_log": pathLog, "write_iops_log": pathLog, "write_hist_log": pathLog,
	"write_iolog": pathOne, "buffer_pattern": patternOpt, "verify_pattern": patternOpt, "mem": memOpt,
	"ioengine": engineOpt, "name": nameOpt,

	"exec_prerun": refuseProgram, "exec_postrun": refuseProgram,

	"ioscheduler": refuseDevice, "cgroup": refuseDevice, "cgroup_nodelete": refuseDevice, "cgroup_weight": refuseDevice,
	"replay_redirect": refuseDevice, "allow_mounted_write": refuseDevice, "profile": refuseDevice,

	"read_iolog": refuseIndirect, "merge_blktrace_file": refuseIndirect,
}

// plainOptions are fio 3.33's options that name no file, run nothing and
// touch only fio's own process and files.
var plainOptions = strings.Fields(`description wait_for lockfile unique_filename rw bs ba bsrange bssplit
bs_unaligned randrepeat randseed norandommap ignore_error rw_sequencer iodepth iodepth_batch
iodepth_batch_complete_min iodepth_batch_complete_max iodepth_low serialize_overlap io_submit_mode size
io_size fill_device filesize file_append offset offset_increment offset_align number_ios random_generator
random_distribution percentage_random allrandrepeat nrfiles file_service_type openfiles fallocate
fadvise_hint fsync fdatasync write_barrier sync_file_range direct atomic buffered overwrite loops numjobs
startdelay runtime time_based verify_only ramp_time clocksource verify do_verify verify_interval
verify_offset verify_fatal verify_dump verify_async verify_backlog verify_backlog_batch
experimental_verify verify_state_load verify_state_save trim_percentage trim_verify_zero trim_backlog
trim_backlog_batch read_iolog_chunked replay_no_stall replay_scale replay_align replay_time_scale
replay_skip merge_blktrace_scalars merge_blktrace_iters zonemode zonesize zonecapacity zonerange zoneskip
read_beyond_wp max_open_zones job_max_open_zones ignore_zone_limits zone_reset_threshold
zone_reset_frequency lockmem rwmixread rwmixwrite nice prio prioclass thinktime thinktime_spin
thinktime_blocks thinktime_blocks_type thinktime_iotime rate rate_min rate_process rate_cycle
rate_ignore_thinktime rate_iops rate_iops_min max_latency latency_target latency_window
latency_percentile latency_run invalidate sync write_hint create_serialize create_fsync create_on_open
create_only allow_file_create pre_read cpumask cpus_allowed cpus_allowed_policy numa_cpu_nodes
numa_mem_policy end_fsync fsync_on_close unlink unlink_each_loop exitall exit_what exitall_on_error
stonewall new_group thread per_job_logs bwavgtime iopsavgtime log_entries log_avg_msec log_hist_msec
log_hist_coarseness log_max_value log_offset log_prio log_compression log_compression_cpus
log_store_compressed log_unix_epoch log_alternate_epoch log_alternate_epoch_clock_id
block_error_percentiles group_reporting stats zero_buffers refill_buffers scramble_buffers
buffer_compress_percentage buffer_compress_chunk dedupe_percentage dedupe_mode
dedupe_working_set_percentage dedupe_global clat_percentiles lat_percentiles slat_percentiles
percentile_list significant_figures disk_util gtod_reduce disable_lat disable_clat disable_slat
disable_bw_measurement gtod_cpu unified_rw_reporting continue_on_error error_dump uid gid kb_base
unit_base hugepage-size flow_id flow flow_sleep steadystate steadystate_duration steadystate_ramp_time
hipri hipri_percentage uncached nowait userspace_reap cmdprio_percentage cmdprio_class cmdprio
cmdprio_bssplit fixedbufs registerfiles sqthread_poll sqthread_poll_cpu nonvectored force_async thp
cpuload cpuchunks cpumode exit_on_io_done stat_type`)

// aliases are fio 3.33's option aliases (`fio --cmdhelp=NAME`).
var aliases = map[string]string{
	"readwrite": "rw", "blocksize": "bs", "blockalign": "ba", "blocksize_range": "bsrange",
	"blocksize_unaligned": "bs_unaligned", "iodepth_batch_submit": "iodepth_batch",
	"iodepth_batch_complete": "iodepth_batch_complete_min", "io_limit": "io_size", "fill_fs": "fill_device",
	"fileoffset": "offset", "nr_files": "nrfiles", "timeout": "runtime", "iomem": "mem", "ratemin": "rate_min",
	"ratecycle": "rate_cycle", "wait_for_previous": "stonewall", "disable_bw": "disable_bw_measurement",
	"ss": "steadystate", "ss_dur": "steadystate_duration", "ss_ramp": "steadystate_ramp_time",
}

func init() {
	for _, o := range plainOptions {
		if _, dup := options[o]; dup {
			panic("fio option listed twice: " + o)
		}
		options[o] = plain
	}
}

// Engines allowed: each does file I/O through the job's own files (or
// none). Every other engine is refused for what it does, or as unknown:
// fio dlopen()s an engine name it does not know (ioengines.c,
// dlopen_ioengine), so an unknown name is code loading.
var allowedEngines = map[string]bool{
	"sync": true, "psync": true, "vsync": true, "pvsync": true, "pvsync2": true, "libaio": true, "io_uring": true,
	"posixaio": true, "mmap": true, "null": true, "cpuio": true, "falloc": true, "ftruncate": true,
	"filecreate": true, "filestat": true, "filedelete": true, "splice": true,
}

var refusedEngines = map[string]string{
	"exec":         "runs a program",
	"net":          "sends network traffic",
	"netsplice":    "sends network traffic",
	"rdma":         "sends network traffic",
	"rados":        "talks to a Ceph cluster over the network",
	"rbd":          "talks to a Ceph cluster over the network",
	"nbd":          "talks to an NBD server over the network",
	"http":         "sends HTTP requests",
	"gfapi":        "talks to a GlusterFS cluster over the network",
	"gfapi_async":  "talks to a GlusterFS cluster over the network",
	"libhdfs":      "talks to HDFS over the network",
	"nfs":          "talks to an NFS server over the network",
	"dfs":          "talks to a DAOS cluster over the network",
	"sg":           "sends SCSI commands to a device",
	"mtd":          "writes an MTD flash device",
	"io_uring_cmd": "passes commands through to an NVMe device",
	"pmemblk":      "uses persistent-memory devices",
	"dev-dax":      "uses a DAX device",
	"libpmem":      "uses persistent-memory devices",
	"e4defrag":     "moves extents between files with an ext4 ioctl (donorname names another file)",
	"xnvme":        "drives NVMe devices directly",
	"spdk":         "drives NVMe devices directly",
	"libcufile":    "uses GPU devices",
}

// Refusal reasons by class.
var reasons = map[class]string{
	refuseProgram:  "runs a program: slowpath runs only fio's own I/O; run the command yourself before or after",
	refuseDevice:   "changes devices or system state outside the run's directory (scheduler, cgroups, raw devices, built-in profiles): remove it",
	refuseIndirect: "replays I/O onto the files or devices named inside the log, which cannot be confined to the run's directory: remove it",
}

// CheckJobFile parses a user's job file and refuses it unless everything
// it names stays inside the directory fio runs in. dir, when not empty, is
// that directory: an existing path component there that is a symbolic
// link is refused too. Every error is a *JobFileError.
func CheckJobFile(b []byte, dir string) ([]ParsedSection, error) {
	secs, err := ParseJobFile(b)
	if err != nil {
		return nil, err
	}
	for _, s := range secs {
		for _, o := range s.Options {
			if err := checkOption(s.Name, o, dir); err != nil {
				return nil, err
			}
		}
	}
	return secs, nil
}

func checkOption(sec string, o ParsedOption, dir string) error {
	bad := func(reason string) error {
		return &JobFileError{Line: o.Line, Section: sec, Option: o.Given, Value: o.Raw, Reason: reason}
	}
	cl, known := options[o.Key]
	if !known {
		return bad("not an fio 3.33 option slowpath knows to be confined (fio --cmdhelp=all, and the options of the allowed engines): remove it")
	}
	if r, ok := reasons[cl]; ok {
		return bad(r)
	}
	// A path must pass both readings of its value: the one fio 3.33 makes
	// (cut at ';' or '#', as fio --showcmd shows) and the whole line,
	// should another fio read it differently. Names and engines are read
	// as fio 3.33 does, so "ioengine=psync ; comment" passes.
	vals := []string{o.Value}
	if cl != nameOpt && cl != engineOpt {
		vals = uniq(o.Value, o.Raw)
	}
	for _, v := range vals {
		if err := checkValue(cl, o, v, dir); err != "" {
			return bad(err)
		}
	}
	return nil
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// checkValue returns why v is refused, or "".
func checkValue(cl class, o ParsedOption, v, dir string) string {
	switch cl {
	case plain:
		return ""
	case nameOpt:
		if err := jobName(v); err != nil {
			return err.Error()
		}
	case engineOpt:
		if allowedEngines[v] {
			return ""
		}
		if strings.HasPrefix(v, "external") {
			return "loads an external engine (code) into fio: use one of " + engineList()
		}
		if r, ok := refusedEngines[v]; ok {
			return "engine " + v + " " + r + ": use one of " + engineList()
		}
		return "unknown engine (fio would try to load it as a shared object): use one of " + engineList()
	case pathOne:
		return localPath(v, dir)
	case pathLog:
		if !o.HasVal || v == "" {
			return "" // named after the job
		}
		return localPath(v, dir)
	case pathList:
		for _, p := range SplitList(v) {
			if r := localPath(p, dir); r != "" {
				return r
			}
		}
	case pathFormat:
		return localPath(expandFormat(v), dir)
	case patternOpt:
		files, ok := patternFiles(v)
		if !ok {
			return "unterminated quote in the pattern"
		}
		for _, f := range files {
			if r := localPath(f, dir); r != "" {
				return "the pattern reads file " + r
			}
		}
	case memOpt:
		typ, file, hasFile := strings.Cut(v, ":")
		switch typ {
		case "malloc", "shm", "shmhuge":
			if hasFile {
				return "only mmap, mmapshared and mmaphuge take a file"
			}
		case "mmap", "mmapshared", "mmaphuge":
			if hasFile {
				return localPath(file, dir)
			}
		default:
			return "use malloc, shm, shmhuge, mmap, mmapshared or mmaphuge"
		}
	}
	return ""
}

func engineList() string {
	return "sync, psync, vsync, pvsync, pvsync2, libaio, io_uring, posixaio, mmap, null, cpuio, falloc, ftruncate, filecreate, filestat, filedelete, splice"
}

// SplitList splits fio's ':'-separated list of names, where '\:' is a
// colon inside a name (HOWTO, filename).
func SplitList(v string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(v); i++ {
		switch {
		case v[i] == '\\' && i+1 < len(v) && v[i+1] == ':':
			cur.WriteByte(':')
			i++
		case v[i] == ':':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(v[i])
		}
	}
	return append(out, cur.String())
}

// expandFormat replaces filename_format's keywords with sample values of
// the same shape: job names are checked to be one component other than .
// and .., numbers are digits, so the template stays inside exactly when
// the sample does. $clientuid (client/server mode) is an IP address.
func expandFormat(v string) string {
	return strings.NewReplacer("$jobname", "job", "$jobnum", "0", "$filenum", "0", "$clientuid", "127.0.0.1").Replace(v)
}

// patternFiles lists the files a pattern reads: fio reads 'NAME' (single
// quotes) as a file and "TEXT" as a string (lib/pattern.c).
func patternFiles(v string) ([]string, bool) {
	var out []string
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '"':
			j := strings.IndexByte(v[i+1:], '"')
			if j < 0 {
				return nil, false
			}
			i += j + 1
		case '\'':
			j := strings.IndexByte(v[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			out = append(out, v[i+1:i+1+j])
			i += j + 1
		}
	}
	return out, true
}

// localPath returns why p does not stay inside the directory fio runs
// in, or "". Relative, no '..' above it (filepath.IsLocal), and, when dir
// is given, no existing component a symbolic link.
func localPath(p, dir string) string {
	if p == "" {
		return "an empty path"
	}
	if filepath.IsAbs(p) {
		return p + ": an absolute path; give a path relative to the run's directory (slowpath runs fio there and removes it afterwards)"
	}
	if !filepath.IsLocal(p) {
		return p + ": leaves the run's directory; give a path relative to it without '..'"
	}
	if dir == "" {
		return ""
	}
	cur := dir
	for _, c := range strings.Split(filepath.Clean(p), string(filepath.Separator)) {
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		if err != nil {
			return "" // does not exist yet: fio creates it inside
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return p + ": " + cur + " is a symbolic link; fio would follow it out of the run's directory"
		}
	}
	return ""
}
