//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// Records the I/O of selected threads on one filesystem, and the block
// requests on the devices beneath it, into a ring buffer (slowpath capture,
// docs/capture.md). No file content, name or user buffer is read.
//
// - Syscalls: syscalls:sys_enter_* / sys_exit_* tracepoints. The arguments'
//   offsets in the tracepoint record come from the tracefs format files
//   (the loader checks every format and sets arg_base); the enter handler
//   resolves the fd to its inode, keeps what it needs per thread, and the
//   exit handler emits one event with the result.
// - Faults of mapped files: tp_btf/mm_filemap_fault (mm/filemap.c
//   filemap_fault, Linux 6.17+), with the thread's maj_flt so user space can
//   tell a miss (VM_FAULT_MAJOR, counted by mm_account_fault after the
//   fault) from the next event of the same thread.
// - Block requests: tp_btf/block_rq_issue + block_rq_complete for
//   request-based disks, tp_btf/block_bio_queue + block_bio_complete for
//   bio-based ones (dm, brd); the loader finds the request or bio argument
//   in each tracepoint's BTF prototype (it moved in 5.11).

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

typedef __u32 dev_t;
typedef __u64 sector_t;

// Minimal CO-RE views: offsets are relocated against the kernel's BTF.
struct super_block {
	dev_t s_dev;
} __attribute__((preserve_access_index));

struct inode {
	unsigned short i_mode;
	unsigned long i_ino;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
	unsigned int f_flags;
	long long f_pos;
} __attribute__((preserve_access_index));

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct task_struct {
	struct files_struct *files;
	unsigned long maj_flt;
} __attribute__((preserve_access_index));

struct address_space {
	struct inode *host;
} __attribute__((preserve_access_index));

struct gendisk {
	int major;
	int first_minor;
} __attribute__((preserve_access_index));

struct block_device {
	dev_t bd_dev;
} __attribute__((preserve_access_index));

struct request_queue {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

struct request {
	struct request_queue *q;
	struct gendisk *rq_disk; // before 5.16
	unsigned int cmd_flags;
	sector_t __sector;
	unsigned int __data_len;
} __attribute__((preserve_access_index));

struct bvec_iter {
	sector_t bi_sector;
	unsigned int bi_size;
} __attribute__((preserve_access_index));

struct bio {
	struct block_device *bi_bdev; // 5.12+
	struct gendisk *bi_disk;      // before 5.12
	unsigned char bi_partno;      // before 5.12
	unsigned int bi_opf;
	unsigned char bi_status;
	struct bvec_iter bi_iter;
} __attribute__((preserve_access_index));

// Event types and the capfile op numbers they carry.
#define EV_OP 1
#define EV_BLOCK 2

#define OP_READ 1
#define OP_WRITE 2
#define OP_FSYNC 3
#define OP_FDATASYNC 4
#define OP_SYNC_FILE_RANGE 5
#define OP_FADVISE 6
#define OP_MADVISE 7
#define OP_MMAP 8
#define OP_OPEN 9
#define OP_FAULT 10
#define OP_MUNMAP 11 // not a record: user space forgets the mapping

#define F_VECTORED (1 << 4)
#define F_POSITIONAL (1 << 5)
#define F_SHARED (1 << 6)
#define F_ADDR (1 << 7) // a fault's offset is a user address (page_fault_user)

struct event {
	__u64 start;
	__u64 end;
	__u64 ino;
	__u64 offset; // block: sector
	__u64 length; // block: bytes
	__s64 ret;    // block: -errno
	__u64 maj_flt;
	__u32 dev;    // kernel dev_t of the file's sb; block: device index
	__u32 tgid;
	__u32 tid;
	__u32 arg;    // advice, flags, prot; block: cmd_flags / bi_opf
	__u32 fflags; // the file's f_flags
	__s32 fd;
	__u8 type;
	__u8 kind;
	__u8 flags;
	__u8 engine; // ENGINE_*: how the I/O was submitted
	__u8 aflags; // AF_*: of an asynchronous request
	__u8 opcode; // io_uring opcode, aio iocb opcode
	__u8 pad[2];
};

// How a file-level I/O was submitted (event.engine).
#define ENGINE_SYNC 0
#define ENGINE_AIO 1
#define ENGINE_URING 2

// event.aflags.
#define AF_LINKED 1      // io_uring IOSQE_IO_LINK or IOSQE_IO_HARDLINK
#define AF_FIXED_FILE 2  // io_uring registered file (IOSQE_FIXED_FILE)
#define AF_FIXED_BUF 4   // io_uring READ_FIXED / WRITE_FIXED
#define AF_LEN_RESULT 8  // the length is the result (vectored io_uring: sqe->len counts iovecs)

// Set by the loader.
volatile const __u32 target_dev = 0;  // kernel dev_t (MKDEV: major << 20 | minor)
volatile const __u32 filter_tgid = 0; // 0: any process
volatile const __u32 self_tgid = 0;   // slowpath itself, never captured (it writes the capture)
volatile const __u8 filter_cgroup = 0;
volatile const __u8 filter_comm = 0;
volatile const char comm[16] = {};
volatile const __u32 arg_base = 16; // offset of a syscall tracepoint's first argument
volatile const __u64 wake_bytes = 1 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); // resized by the loader
} events SEC(".maps");

// cgroup to match (index 0), with bpf_current_task_under_cgroup: the
// cgroup or a descendant.
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroups SEC(".maps");

// Processes that mapped a file of the mount (filled by user space at the
// start, and by mmap exits): only their madvise and munmap calls are
// recorded, as the others cannot concern a captured file.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} mappers SEC(".maps");

// The syscall in flight per thread (one at a time per thread).
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct event);
} inflight SEC(".maps");

// Devices whose requests are recorded: kernel dev_t -> device id (1-based).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} devices SEC(".maps");

// Requests and bios in flight, by address.
struct blk_start {
	__u64 issue;
	__u64 sector;
	__u32 bytes;
	__u32 opf;
	__u32 dev;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct blk_start);
} blk_inflight SEC(".maps");

enum {
	CNT_DROPPED = 0,   // ring buffer full: event lost
	CNT_UNMATCHED = 1, // exit or completion without its start
	CNT_EVENTS = 2,    // events submitted
	// I/O of captured threads on files of the mount that no record
	// describes, calls and bytes asked (docs/capture.md, "What is missed").
	CNT_SPLICE = 3,
	CNT_SPLICE_BYTES = 4,
	CNT_SENDFILE = 5,
	CNT_SENDFILE_BYTES = 6,
	CNT_COPY_FILE_RANGE = 7,
	CNT_COPY_FILE_RANGE_BYTES = 8,
	CNT_URING_OTHER = 9,        // io_uring requests of other opcodes on a file of the mount
	CNT_AIO_OTHER = 10,         // iocbs beyond AIO_MAX per io_submit, or of other opcodes
	CNT_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count_n(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		*v += n;
}

static __always_inline void count(__u32 idx) { count_n(idx, 1); }

static __always_inline void submit(struct event *src)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(CNT_DROPPED);
		return;
	}
	__builtin_memcpy(e, src, sizeof(*e));
	// Waking the reader per event would cost a context switch per I/O: it
	// is woken when a batch is waiting, and polls on a short deadline
	// otherwise.
	__u64 flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(e, flags);
	count(CNT_EVENTS);
}

static __always_inline int wanted_task(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (tgid == self_tgid || (filter_tgid && tgid != filter_tgid))
		return 0;
	if (filter_comm) {
		char c[16] = {};
		bpf_get_current_comm(c, sizeof(c));
		for (int i = 0; i < 16; i++) {
			if (c[i] != comm[i])
				return 0;
			if (!c[i])
				break;
		}
	}
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroups, 0) != 1)
		return 0;
	return 1;
}

// arg reads argument i of a syscall tracepoint record at arg_base, the
// offset the loader read in the format files. The verifier allows a plain
// context load only at an offset fixed in the instruction: the layout
// every kernel since 2.6.33 has (16) gets one, any other a probe read.
static __always_inline __u64 arg(void *ctx, int i)
{
	if (arg_base == 16)
		return *(__u64 *)(ctx + 16 + 8 * i);
	__u64 v = 0;
	bpf_probe_read_kernel(&v, sizeof(v), ctx + arg_base + 8 * i);
	return v;
}

// S_IFMT and S_IFREG (include/uapi/linux/stat.h): only regular files are
// captured (not the directories a service opens, nor devices or pipes).
static __always_inline int regular(struct inode *inode)
{
	return (BPF_CORE_READ(inode, i_mode) & 0170000) == 0100000;
}

static __always_inline struct file *fd_file(__s64 fd)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
	if (!fdt || fd < 0 || (__u64)fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = 0;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

// begin starts an event for the current thread on file descriptor fd
// (-1: no file, for madvise and munmap). It returns 0 when the thread or
// the file is not captured.
static __always_inline int begin(__u8 kind, __s64 fd, __u64 offset, __u64 length, __u32 a, __u8 flags, int use_pos)
{
	if (!wanted_task())
		return 0;
	if (kind == OP_MADVISE || kind == OP_MUNMAP) {
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		if (!bpf_map_lookup_elem(&mappers, &tgid))
			return 0;
	}
	struct event ev = {};
	if (fd >= 0) {
		struct file *f = fd_file(fd);
		if (!f)
			return 0;
		struct inode *inode = BPF_CORE_READ(f, f_inode);
		ev.dev = BPF_CORE_READ(inode, i_sb, s_dev);
		if (ev.dev != target_dev || !regular(inode))
			return 0;
		ev.ino = BPF_CORE_READ(inode, i_ino);
		ev.fflags = BPF_CORE_READ(f, f_flags);
		if (use_pos)
			offset = BPF_CORE_READ(f, f_pos);
	}
	__u64 pt = bpf_get_current_pid_tgid();
	ev.type = EV_OP;
	ev.kind = kind;
	ev.flags = flags;
	ev.fd = fd;
	ev.offset = offset;
	ev.length = length;
	ev.arg = a;
	ev.tgid = pt >> 32;
	ev.tid = (__u32)pt;
	ev.start = bpf_ktime_get_ns();
	__u32 tid = ev.tid;
	bpf_map_update_elem(&inflight, &tid, &ev, BPF_ANY);
	return 0;
}

static __always_inline void finish(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct event *ev = bpf_map_lookup_elem(&inflight, &tid);
	if (!ev)
		return;
	ev->end = bpf_ktime_get_ns();
	// sys_exit_*: ret where the enter record has its first argument.
	ev->ret = arg(ctx, 0);
	if (ev->kind == OP_OPEN && ev->ret < 0) {
		// A failed open names no inode: nothing says it was on the mount.
		bpf_map_delete_elem(&inflight, &tid);
		return;
	}
	if (ev->kind == OP_OPEN) {
		// The inode is known only now that the fd exists.
		struct file *f = fd_file(ev->ret);
		struct inode *inode = f ? BPF_CORE_READ(f, f_inode) : 0;
		__u32 dev = inode ? BPF_CORE_READ(inode, i_sb, s_dev) : 0;
		if (!inode || dev != target_dev || !regular(inode)) {
			bpf_map_delete_elem(&inflight, &tid);
			return;
		}
		ev->dev = dev;
		ev->ino = BPF_CORE_READ(inode, i_ino);
		ev->fflags = BPF_CORE_READ(f, f_flags);
		ev->fd = ev->ret;
	}
	if (ev->kind == OP_MMAP && ev->ret >= 0) {
		__u32 tgid = ev->tgid, one = 1;
		bpf_map_update_elem(&mappers, &tgid, &one, BPF_ANY);
	}
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	ev->maj_flt = BPF_CORE_READ(t, maj_flt);
	submit(ev);
	bpf_map_delete_elem(&inflight, &tid);
}

#define EXIT(name)                                     \
	SEC("tracepoint/syscalls/sys_exit_" #name)     \
	int exit_##name(void *ctx)                     \
	{                                              \
		finish(ctx);                           \
		return 0;                              \
	}

// read(fd, buf, count), write(fd, buf, count)
SEC("tracepoint/syscalls/sys_enter_read")
int enter_read(void *ctx) { return begin(OP_READ, arg(ctx, 0), 0, arg(ctx, 2), 0, 0, 1); }
EXIT(read)
SEC("tracepoint/syscalls/sys_enter_write")
int enter_write(void *ctx) { return begin(OP_WRITE, arg(ctx, 0), 0, arg(ctx, 2), 0, 0, 1); }
EXIT(write)

// pread64(fd, buf, count, pos), pwrite64(fd, buf, count, pos)
SEC("tracepoint/syscalls/sys_enter_pread64")
int enter_pread64(void *ctx) { return begin(OP_READ, arg(ctx, 0), arg(ctx, 3), arg(ctx, 2), 0, F_POSITIONAL, 0); }
EXIT(pread64)
SEC("tracepoint/syscalls/sys_enter_pwrite64")
int enter_pwrite64(void *ctx) { return begin(OP_WRITE, arg(ctx, 0), arg(ctx, 3), arg(ctx, 2), 0, F_POSITIONAL, 0); }
EXIT(pwrite64)

struct iovec {
	void *iov_base;
	__u64 iov_len;
};

// iov_bytes sums the lengths of a user iovec array; at most 64 entries are
// read (an iovec longer than that has its length capped, and user space
// takes the result as the length when it is larger).
static __always_inline __u64 iov_bytes(__u64 uiov, __u64 n)
{
	__u64 total = 0;
	for (int i = 0; i < 64; i++) {
		if (i >= n)
			break;
		struct iovec v = {};
		if (bpf_probe_read_user(&v, sizeof(v), (void *)(uiov + i * sizeof(v))))
			break;
		total += v.iov_len;
	}
	return total;
}

// readv(fd, vec, vlen), preadv(fd, vec, vlen, pos_l, pos_h): on 64-bit
// pos_l holds the whole offset (fs/read_write.c pos_from_hilo).
SEC("tracepoint/syscalls/sys_enter_readv")
int enter_readv(void *ctx) { return begin(OP_READ, arg(ctx, 0), 0, iov_bytes(arg(ctx, 1), arg(ctx, 2)), 0, F_VECTORED, 1); }
EXIT(readv)
SEC("tracepoint/syscalls/sys_enter_writev")
int enter_writev(void *ctx) { return begin(OP_WRITE, arg(ctx, 0), 0, iov_bytes(arg(ctx, 1), arg(ctx, 2)), 0, F_VECTORED, 1); }
EXIT(writev)
SEC("tracepoint/syscalls/sys_enter_preadv")
int enter_preadv(void *ctx) { return begin(OP_READ, arg(ctx, 0), arg(ctx, 3), iov_bytes(arg(ctx, 1), arg(ctx, 2)), 0, F_VECTORED | F_POSITIONAL, 0); }
EXIT(preadv)
SEC("tracepoint/syscalls/sys_enter_pwritev")
int enter_pwritev(void *ctx) { return begin(OP_WRITE, arg(ctx, 0), arg(ctx, 3), iov_bytes(arg(ctx, 1), arg(ctx, 2)), 0, F_VECTORED | F_POSITIONAL, 0); }
EXIT(pwritev)

// fsync(fd), fdatasync(fd)
SEC("tracepoint/syscalls/sys_enter_fsync")
int enter_fsync(void *ctx) { return begin(OP_FSYNC, arg(ctx, 0), 0, 0, 0, 0, 0); }
EXIT(fsync)
SEC("tracepoint/syscalls/sys_enter_fdatasync")
int enter_fdatasync(void *ctx) { return begin(OP_FDATASYNC, arg(ctx, 0), 0, 0, 0, 0, 0); }
EXIT(fdatasync)

// sync_file_range(fd, offset, nbytes, flags)
SEC("tracepoint/syscalls/sys_enter_sync_file_range")
int enter_sync_file_range(void *ctx) { return begin(OP_SYNC_FILE_RANGE, arg(ctx, 0), arg(ctx, 1), arg(ctx, 2), arg(ctx, 3), 0, 0); }
EXIT(sync_file_range)

// fadvise64(fd, offset, len, advice)
SEC("tracepoint/syscalls/sys_enter_fadvise64")
int enter_fadvise64(void *ctx) { return begin(OP_FADVISE, arg(ctx, 0), arg(ctx, 1), arg(ctx, 2), arg(ctx, 3), 0, 0); }
EXIT(fadvise64)

// madvise(start, len_in, behavior), munmap(addr, len): addresses, resolved
// to files in user space from the thread's mmaps.
SEC("tracepoint/syscalls/sys_enter_madvise")
int enter_madvise(void *ctx) { return begin(OP_MADVISE, -1, arg(ctx, 0), arg(ctx, 1), arg(ctx, 2), 0, 0); }
EXIT(madvise)
SEC("tracepoint/syscalls/sys_enter_munmap")
int enter_munmap(void *ctx) { return begin(OP_MUNMAP, -1, arg(ctx, 0), arg(ctx, 1), 0, 0, 0); }
EXIT(munmap)

// mmap(addr, len, prot, flags, fd, off): the result is the address.
SEC("tracepoint/syscalls/sys_enter_mmap")
int enter_mmap(void *ctx)
{
	__s64 fd = arg(ctx, 4);
	if (fd < 0)
		return 0;
	// MAP_SHARED 1, MAP_SHARED_VALIDATE 3 (include/uapi/linux/mman.h).
	__u8 fl = (arg(ctx, 3) & 1) ? F_SHARED : 0;
	return begin(OP_MMAP, fd, arg(ctx, 5), arg(ctx, 1), arg(ctx, 2), fl, 0);
}
EXIT(mmap)

// openat(dfd, filename, flags, mode): the name is not read.
SEC("tracepoint/syscalls/sys_enter_openat")
int enter_openat(void *ctx) { return begin(OP_OPEN, -1, 0, 0, arg(ctx, 2), 0, 0); }
EXIT(openat)

// on_mount says whether f is a regular file of the captured filesystem.
static __always_inline int on_mount(struct file *f)
{
	if (!f)
		return 0;
	struct inode *inode = BPF_CORE_READ(f, f_inode);
	return inode && BPF_CORE_READ(inode, i_sb, s_dev) == target_dev && regular(inode);
}

// fill_file sets the event's file fields from f; 0 when f is not captured.
static __always_inline int fill_file(struct event *ev, struct file *f)
{
	if (!on_mount(f))
		return 0;
	struct inode *inode = BPF_CORE_READ(f, f_inode);
	ev->dev = target_dev;
	ev->ino = BPF_CORE_READ(inode, i_ino);
	ev->fflags = BPF_CORE_READ(f, f_flags);
	return 1;
}

// I/O the capture cannot describe as records is counted (calls and bytes
// asked) when one of its files is on the mount: the fidelity report then
// knows which block bytes no record explains.
static __always_inline int missed(__u32 cnt, __s64 fd1, __s64 fd2, __u64 bytes)
{
	if (!wanted_task())
		return 0;
	if (on_mount(fd_file(fd1)) || on_mount(fd_file(fd2))) {
		count(cnt);
		count_n(cnt + 1, bytes);
	}
	return 0;
}

// splice(fd_in, off_in, fd_out, off_out, len, flags)
SEC("tracepoint/syscalls/sys_enter_splice")
int enter_splice(void *ctx) { return missed(CNT_SPLICE, arg(ctx, 0), arg(ctx, 2), arg(ctx, 4)); }
// sendfile64(out_fd, in_fd, offset, count)
SEC("tracepoint/syscalls/sys_enter_sendfile64")
int enter_sendfile64(void *ctx) { return missed(CNT_SENDFILE, arg(ctx, 0), arg(ctx, 1), arg(ctx, 3)); }
// copy_file_range(fd_in, off_in, fd_out, off_out, len, flags)
SEC("tracepoint/syscalls/sys_enter_copy_file_range")
int enter_copy_file_range(void *ctx) { return missed(CNT_COPY_FILE_RANGE, arg(ctx, 0), arg(ctx, 2), arg(ctx, 4)); }

// Linux AIO (fs/aio.c). struct iocb as user space lays it out
// (include/uapi/linux/aio_abi.h, little-endian).
struct user_iocb {
	__u64 aio_data;
	__u32 aio_key;
	__u32 aio_rw_flags;
	__u16 aio_lio_opcode;
	__s16 aio_reqprio;
	__u32 aio_fildes;
	__u64 aio_buf;
	__u64 aio_nbytes;
	__s64 aio_offset;
	__u64 aio_reserved2;
	__u32 aio_flags;
	__u32 aio_resfd;
};

struct user_io_event {
	__u64 data;
	__u64 obj; // the iocb's user address
	__s64 res;
	__s64 res2;
};

// IOCB_CMD_* (aio_abi.h).
#define IOCB_CMD_PREAD 0
#define IOCB_CMD_PWRITE 1
#define IOCB_CMD_FSYNC 2
#define IOCB_CMD_FDSYNC 3
#define IOCB_CMD_PREADV 7
#define IOCB_CMD_PWRITEV 8

#define AIO_MAX 64       // iocbs read per io_submit; the rest are counted as missed
#define AIO_REAP_MAX 128 // io_events read per io_getevents

// An iocb in flight, by its user address in its process.
struct aio_key {
	__u64 iocb;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct aio_key);
	__type(value, struct event);
} aio_inflight SEC(".maps");

// The io_event array of each thread's io_getevents in flight.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} aio_reap SEC(".maps");

// io_submit(ctx_id, nr, iocbpp): each iocb is read from user memory at
// entry; its completion comes from the io_getevents that reaps it, so its
// latency is submission to reaping.
SEC("tracepoint/syscalls/sys_enter_io_submit")
int enter_io_submit(void *ctx)
{
	if (!wanted_task())
		return 0;
	__s64 nr = arg(ctx, 1);
	__u64 iocbpp = arg(ctx, 2);
	__u64 pt = bpf_get_current_pid_tgid();
	if (nr > AIO_MAX)
		count_n(CNT_AIO_OTHER, nr - AIO_MAX);
	for (int i = 0; i < AIO_MAX; i++) {
		if (i >= nr)
			break;
		__u64 p = 0;
		struct user_iocb cb = {};
		if (bpf_probe_read_user(&p, sizeof(p), (void *)(iocbpp + 8 * i)) || bpf_probe_read_user(&cb, sizeof(cb), (void *)p))
			break;
		struct event ev = {};
		switch (cb.aio_lio_opcode) {
		case IOCB_CMD_PREAD:
			ev.kind = OP_READ;
			break;
		case IOCB_CMD_PWRITE:
			ev.kind = OP_WRITE;
			break;
		case IOCB_CMD_PREADV:
			ev.kind = OP_READ;
			ev.flags = F_VECTORED;
			ev.aflags = AF_LEN_RESULT;
			break;
		case IOCB_CMD_PWRITEV:
			ev.kind = OP_WRITE;
			ev.flags = F_VECTORED;
			ev.aflags = AF_LEN_RESULT;
			break;
		case IOCB_CMD_FSYNC:
			ev.kind = OP_FSYNC;
			break;
		case IOCB_CMD_FDSYNC:
			ev.kind = OP_FDATASYNC;
			break;
		}
		struct file *f = fd_file(cb.aio_fildes);
		if (!fill_file(&ev, f))
			continue;
		if (!ev.kind) {
			count(CNT_AIO_OTHER);
			continue;
		}
		ev.type = EV_OP;
		ev.engine = ENGINE_AIO;
		ev.opcode = cb.aio_lio_opcode;
		ev.flags |= F_POSITIONAL;
		ev.fd = cb.aio_fildes;
		if (ev.kind == OP_READ || ev.kind == OP_WRITE) {
			ev.offset = cb.aio_offset;
			ev.length = ev.flags & F_VECTORED ? 0 : cb.aio_nbytes;
		}
		ev.tgid = pt >> 32;
		ev.tid = (__u32)pt;
		ev.start = bpf_ktime_get_ns();
		struct aio_key k = {.iocb = p, .tgid = ev.tgid};
		bpf_map_update_elem(&aio_inflight, &k, &ev, BPF_ANY);
	}
	return 0;
}

// io_getevents(ctx_id, min_nr, nr, events, timeout) and io_pgetevents
// (the same, and a signal mask): the events array is kept at entry.
static __always_inline int reap_enter(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (tgid == self_tgid)
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 evs = arg(ctx, 3);
	bpf_map_update_elem(&aio_reap, &tid, &evs, BPF_ANY);
	return 0;
}

static __always_inline int reap_exit(void *ctx)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pt;
	__u64 *evs = bpf_map_lookup_elem(&aio_reap, &tid);
	if (!evs)
		return 0;
	__u64 base = *evs;
	bpf_map_delete_elem(&aio_reap, &tid);
	__s64 n = arg(ctx, 0);
	__u64 now = bpf_ktime_get_ns();
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u64 maj = BPF_CORE_READ(t, maj_flt);
	for (int i = 0; i < AIO_REAP_MAX; i++) {
		if (i >= n)
			break;
		struct user_io_event ue = {};
		if (bpf_probe_read_user(&ue, sizeof(ue), (void *)(base + i * sizeof(ue))))
			break;
		struct aio_key k = {.iocb = ue.obj, .tgid = pt >> 32};
		struct event *ev = bpf_map_lookup_elem(&aio_inflight, &k);
		if (!ev)
			continue;
		ev->end = now;
		ev->ret = ue.res;
		ev->maj_flt = maj;
		submit(ev);
		bpf_map_delete_elem(&aio_inflight, &k);
	}
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_io_getevents")
int enter_io_getevents(void *ctx) { return reap_enter(ctx); }
SEC("tracepoint/syscalls/sys_exit_io_getevents")
int exit_io_getevents(void *ctx) { return reap_exit(ctx); }
SEC("tracepoint/syscalls/sys_enter_io_pgetevents")
int enter_io_pgetevents(void *ctx) { return reap_enter(ctx); }
SEC("tracepoint/syscalls/sys_exit_io_pgetevents")
int exit_io_pgetevents(void *ctx) { return reap_exit(ctx); }

// io_uring (io_uring/*.c, 6.1+): tp_btf/io_uring_submit_req(struct io_kiocb
// *req) fires after the request's prep read its SQE, in the thread that
// submitted it (the SQPOLL thread for such rings: a thread of the same
// process), and tp_btf/io_uring_complete(ctx, req, ...) when its CQE is
// filled, when req->file is assigned (registered files included).
// Minimal CO-RE views; the command data (struct io_rw, struct io_sync)
// overlays the start of struct io_kiocb (io_kiocb_to_cmd).
struct kiocb {
	struct file *ki_filp;
	long long ki_pos;
} __attribute__((preserve_access_index));

struct io_rw {
	struct kiocb kiocb;
	__u64 addr;
	__u32 len;
} __attribute__((preserve_access_index));

struct io_sync {
	struct file *file;
	long long len;
	long long off;
	int flags;
} __attribute__((preserve_access_index));

struct io_cqe {
	__u64 user_data;
	int res;
	int fd; // in a union with flags: the SQE's fd until completion
} __attribute__((preserve_access_index));

// flags is u32 before 6.10 and u64 (io_req_flags_t) since: its low bits,
// read here, are the IOSQE_* flags in both (REQ_F_FIXED_FILE_BIT =
// IOSQE_FIXED_FILE_BIT, ...).
struct io_kiocb {
	struct file *file;
	__u8 opcode;
	unsigned int flags;
	struct io_cqe cqe;
} __attribute__((preserve_access_index));

// IORING_OP_* (include/uapi/linux/io_uring.h).
#define IORING_OP_READV 1
#define IORING_OP_WRITEV 2
#define IORING_OP_FSYNC 3
#define IORING_OP_READ_FIXED 4
#define IORING_OP_WRITE_FIXED 5
#define IORING_OP_SYNC_FILE_RANGE 8
#define IORING_OP_READ 22
#define IORING_OP_WRITE 23
#define IORING_FSYNC_DATASYNC 1
#define IOSQE_FIXED_FILE 1
#define IOSQE_IO_LINK 4
#define IOSQE_IO_HARDLINK 8

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct event);
} uring_inflight SEC(".maps");

SEC("tp_btf/io_uring_submit_req")
int on_uring_submit(__u64 *ctx)
{
	struct io_kiocb *req = (struct io_kiocb *)ctx[0];
	if (!wanted_task())
		return 0;
	__u8 op = BPF_CORE_READ(req, opcode);
	__u32 fl = BPF_CORE_READ(req, flags);
	struct io_rw *rw = (struct io_rw *)req;
	struct io_sync *sy = (struct io_sync *)req;
	__u64 pt = bpf_get_current_pid_tgid();
	struct event ev = {.type = EV_OP, .engine = ENGINE_URING, .opcode = op, .fd = -1, .tgid = pt >> 32, .tid = (__u32)pt};
	if (fl & IOSQE_FIXED_FILE)
		ev.aflags |= AF_FIXED_FILE;
	else
		ev.fd = BPF_CORE_READ(req, cqe.fd); // user space opens the file by it to stat it
	if (fl & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK))
		ev.aflags |= AF_LINKED;
	switch (op) {
	case IORING_OP_READV:
	case IORING_OP_WRITEV:
		ev.flags = F_VECTORED;
		ev.aflags |= AF_LEN_RESULT;
		// fallthrough
	case IORING_OP_READ:
	case IORING_OP_WRITE:
	case IORING_OP_READ_FIXED:
	case IORING_OP_WRITE_FIXED:
		ev.kind = (op == IORING_OP_READ || op == IORING_OP_READV || op == IORING_OP_READ_FIXED) ? OP_READ : OP_WRITE;
		if (op == IORING_OP_READ_FIXED || op == IORING_OP_WRITE_FIXED)
			ev.aflags |= AF_FIXED_BUF;
		ev.offset = BPF_CORE_READ(rw, kiocb.ki_pos);
		if (!(ev.flags & F_VECTORED))
			ev.length = BPF_CORE_READ(rw, len);
		if (!ev.length)
			ev.aflags |= AF_LEN_RESULT; // a provided buffer (IOSQE_BUFFER_SELECT)
		// An offset of -1 is the file position: taken at completion.
		if (ev.offset != (__u64)-1)
			ev.flags |= F_POSITIONAL;
		break;
	case IORING_OP_FSYNC:
		ev.kind = (BPF_CORE_READ(sy, flags) & IORING_FSYNC_DATASYNC) ? OP_FDATASYNC : OP_FSYNC;
		break;
	case IORING_OP_SYNC_FILE_RANGE:
		ev.kind = OP_SYNC_FILE_RANGE;
		ev.offset = BPF_CORE_READ(sy, off);
		ev.length = BPF_CORE_READ(sy, len);
		ev.arg = BPF_CORE_READ(sy, flags);
		break;
	}
	ev.start = bpf_ktime_get_ns();
	__u64 key = (__u64)req;
	bpf_map_update_elem(&uring_inflight, &key, &ev, BPF_ANY);
	return 0;
}

SEC("tp_btf/io_uring_complete")
int on_uring_complete(__u64 *ctx)
{
	__u64 key = ctx[1];
	struct event *ev = bpf_map_lookup_elem(&uring_inflight, &key);
	if (!ev)
		return 0;
	struct io_kiocb *req = (struct io_kiocb *)key;
	struct file *f = BPF_CORE_READ(req, file);
	if (!fill_file(ev, f)) {
		bpf_map_delete_elem(&uring_inflight, &key);
		return 0;
	}
	if (!ev->kind) {
		count(CNT_URING_OTHER);
		bpf_map_delete_elem(&uring_inflight, &key);
		return 0;
	}
	ev->end = bpf_ktime_get_ns();
	ev->ret = BPF_CORE_READ(req, cqe.res);
	if (!(ev->flags & F_POSITIONAL) && (ev->kind == OP_READ || ev->kind == OP_WRITE)) {
		// The file position has moved past what was done.
		__s64 done = ev->ret > 0 ? ev->ret : 0;
		ev->offset = BPF_CORE_READ(f, f_pos) - done;
	}
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	ev->maj_flt = BPF_CORE_READ(t, maj_flt);
	submit(ev);
	bpf_map_delete_elem(&uring_inflight, &key);
	return 0;
}


// mm_filemap_fault(struct address_space *mapping, pgoff_t index).
SEC("tp_btf/mm_filemap_fault")
int on_filemap_fault(__u64 *ctx)
{
	struct address_space *mapping = (struct address_space *)ctx[0];
	struct inode *inode = BPF_CORE_READ(mapping, host);
	__u32 dev = BPF_CORE_READ(inode, i_sb, s_dev);
	if (dev != target_dev || !wanted_task())
		return 0;
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u64 pt = bpf_get_current_pid_tgid();
	struct event ev = {
		.type = EV_OP,
		.kind = OP_FAULT,
		.dev = dev,
		.ino = BPF_CORE_READ(inode, i_ino),
		.offset = ctx[1], // page index: user space multiplies by the page size
		.tgid = pt >> 32,
		.tid = (__u32)pt,
		.fd = -1,
		.maj_flt = BPF_CORE_READ(t, maj_flt),
	};
	ev.start = ev.end = bpf_ktime_get_ns();
	submit(&ev);
	return 0;
}

// exceptions:page_fault_user(unsigned long address, struct pt_regs *regs,
// unsigned long error_code) (arch/x86/include/asm/trace/exceptions.h, x86
// since 3.13), for kernels without mm_filemap_fault: every user page fault
// of a process that maps a captured file; user space keeps those in such
// a mapping, from the mmaps it saw and /proc/PID/maps at the start.
SEC("tp_btf/page_fault_user")
int on_page_fault_user(__u64 *ctx)
{
	if (!wanted_task())
		return 0;
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 tgid = pt >> 32;
	if (!bpf_map_lookup_elem(&mappers, &tgid))
		return 0;
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct event ev = {
		.type = EV_OP,
		.kind = OP_FAULT,
		.flags = F_ADDR,
		.offset = ctx[0],
		.tgid = tgid,
		.tid = (__u32)pt,
		.fd = -1,
		.maj_flt = BPF_CORE_READ(t, maj_flt),
	};
	ev.start = ev.end = bpf_ktime_get_ns();
	submit(&ev);
	return 0;
}

static __always_inline void blk_begin(__u64 key, __u32 kdev, __u64 sector, __u32 bytes, __u32 opf)
{
	__u32 *id = bpf_map_lookup_elem(&devices, &kdev);
	if (!id)
		return;
	struct blk_start s = {.issue = bpf_ktime_get_ns(), .sector = sector, .bytes = bytes, .opf = opf, .dev = *id};
	bpf_map_update_elem(&blk_inflight, &key, &s, BPF_ANY);
}

static __always_inline void blk_end(__u64 key, __s64 err)
{
	struct blk_start *s = bpf_map_lookup_elem(&blk_inflight, &key);
	if (!s)
		return;
	struct event ev = {
		.type = EV_BLOCK,
		.start = s->issue,
		.end = bpf_ktime_get_ns(),
		.offset = s->sector,
		.length = s->bytes,
		.arg = s->opf,
		.dev = s->dev,
		.ret = err,
	};
	bpf_map_delete_elem(&blk_inflight, &key);
	submit(&ev);
}

static __always_inline __u32 disk_dev(struct gendisk *d)
{
	return ((__u32)BPF_CORE_READ(d, major) << 20) | (__u32)BPF_CORE_READ(d, first_minor);
}

static __always_inline void rq_issue(struct request *rq)
{
	struct gendisk *d;
	if (bpf_core_field_exists(rq->rq_disk))
		d = BPF_CORE_READ(rq, rq_disk);
	else
		d = BPF_CORE_READ(rq, q, disk);
	blk_begin((__u64)rq, disk_dev(d), BPF_CORE_READ(rq, __sector), BPF_CORE_READ(rq, __data_len), BPF_CORE_READ(rq, cmd_flags));
}

// block_rq_issue(struct request *rq) since 5.11; (struct request_queue *q,
// struct request *rq) before. Two programs, as the verifier of older
// kernels allows context loads at constant offsets only; the loader keeps
// the one the kernel's BTF prototype matches.
SEC("tp_btf/block_rq_issue")
int on_rq_issue(__u64 *ctx)
{
	rq_issue((struct request *)ctx[0]);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int on_rq_issue_q(__u64 *ctx)
{
	rq_issue((struct request *)ctx[1]);
	return 0;
}

// block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes)
// (5.10: the same with int error). The status is turned into an errno in
// user space: here it is only 0 or not.
SEC("tp_btf/block_rq_complete")
int on_rq_complete(__u64 *ctx)
{
	blk_end(ctx[0], (__u8)ctx[1] ? -5 : 0);
	return 0;
}

static __always_inline void bio_queue(struct bio *bio)
{
	__u32 kdev;
	if (bpf_core_field_exists(bio->bi_bdev))
		kdev = BPF_CORE_READ(bio, bi_bdev, bd_dev);
	else
		kdev = disk_dev(BPF_CORE_READ(bio, bi_disk)) + BPF_CORE_READ(bio, bi_partno);
	blk_begin((__u64)bio, kdev, BPF_CORE_READ(bio, bi_iter.bi_sector), BPF_CORE_READ(bio, bi_iter.bi_size), BPF_CORE_READ(bio, bi_opf));
}

// block_bio_queue(struct bio *bio) since 5.11; (struct request_queue *q,
// struct bio *bio) before: as block_rq_issue.
SEC("tp_btf/block_bio_queue")
int on_bio_queue(__u64 *ctx)
{
	bio_queue((struct bio *)ctx[0]);
	return 0;
}

SEC("tp_btf/block_bio_queue")
int on_bio_queue_q(__u64 *ctx)
{
	bio_queue((struct bio *)ctx[1]);
	return 0;
}

// block_bio_complete(struct request_queue *q, struct bio *bio): the status
// is bio->bi_status, recorded as 0 or -EIO.
SEC("tp_btf/block_bio_complete")
int on_bio_complete(__u64 *ctx)
{
	struct bio *bio = (struct bio *)ctx[1];
	blk_end((__u64)bio, BPF_CORE_READ(bio, bi_status) ? -5 : 0);
	return 0;
}
