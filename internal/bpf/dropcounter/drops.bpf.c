//go:build ignore

// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
//
// Counts dropped packets in the kernel, keyed by (reason, location,
// ifindex, kernel stack id), from the BTF tracepoint skb:kfree_skb.
// Nothing is sent to user space per packet: user space reads the maps once
// at the end.
//
// The tracepoint's arguments (include/trace/events/skb.h):
//   5.5–5.16:  (skb, location)
//   5.17–6.10: (skb, location, reason)
//   6.11+:     (skb, location, reason, rx_sk)
// As a tp_btf program the arguments arrive as a u64 array in that order,
// so reason is always ctx[2] when it exists; the loader sets has_reason
// from the kernel's BTF, and the verifier prunes the branch when it is
// false (a frozen .rodata value is a known constant).

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// Minimal CO-RE views of kernel structs: field offsets are relocated
// against the running kernel's BTF at load time.
struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct net {
	struct ns_common ns;
} __attribute__((preserve_access_index));

// possible_net_t (include/net/net_namespace.h), a typedef'd struct.
struct possible_net {
	struct net *net;
} __attribute__((preserve_access_index));

struct net_device {
	int ifindex;
	struct possible_net nd_net;
} __attribute__((preserve_access_index));

struct sk_buff {
	struct net_device *dev;
	int skb_iif;
} __attribute__((preserve_access_index));

struct drop_key {
	__u32 reason;
	__u32 ifindex;
	__u64 location;
	__s32 stack_id; // -1: no stack (not requested or not collected)
	__u32 netns;    // inode of the device's network namespace; 0: unknown
};

// Set by the loader before load.
volatile const __u8 has_reason = 1;
volatile const __u8 with_stacks = 0;
// Stack of NOT_SPECIFIED frees are skipped unless asked for: they are
// numerous and mostly not drops (docs/drops.md).
volatile const __u8 stack_unspecified = 0;
volatile const __u32 unspecified_reason = 2;
volatile const __u32 filter_ifindex = 0; // 0: every interface
volatile const __u32 filter_netns = 0;   // with filter_ifindex: its namespace
// A stack walk costs microseconds, hundreds of times the rest of the
// program: per CPU, walk the stack of a drop unlike the last one walked,
// then of one in stack_every drops like it; the drops in between count
// under the last stack walked. 1 walks every drop's stack.
volatile const __u32 stack_every = 1;

#define MAX_ENTRIES 16384

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, MAX_ENTRIES);
	__type(key, struct drop_key);
	__type(value, __u64);
} drops SEC(".maps");

// Stack ids are a hash of the stack: with no BPF_F_REUSE_STACKID a
// colliding stack is not recorded (the drop is still counted, as "no
// stack"), so the table is sized well above the few hundred distinct drop
// stacks a busy host shows. 64 frames cover the deepest network paths
// (perf keeps 127) at 8 MiB for the whole map.
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 64 * sizeof(__u64));
} stacks SEC(".maps");

// Floods drop runs of packets with the same key on a CPU. The last key
// and a pending count are kept per CPU, so a repeat costs an array lookup
// and a compare instead of a hash lookup; the pending count is flushed to
// the hash when the key changes, and user space adds what is still
// pending when it reads.
//
// walked is the last drop whose stack was walked, and since_walk counts
// the drops like it since. It is kept apart from key so that frees whose
// stacks are not wanted (NOT_SPECIFIED), which interleave with a flood's
// drops, do not force a new walk.
struct last_drop {
	struct drop_key key;
	__u64 pending;
	struct drop_key walked;
	__u64 since_walk;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct last_drop);
} last_drops SEC(".maps");

// What the program tells about itself, per CPU.
enum {
	ERR_KEYS = 0,    // the drops map was full: packets not counted
	ERR_STACKS = 1,  // bpf_get_stackid failed: counted without a stack
	STACK_WALKS = 2, // stacks walked (sampling: see stack_every)
	COUNTERS_MAX,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, COUNTERS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		*v += n;
}

static __always_inline void flush(struct drop_key *key, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&drops, key);
	if (v) {
		*v += n; // per-CPU value: no atomic needed
		return;
	}
	if (bpf_map_update_elem(&drops, key, &n, BPF_NOEXIST)) {
		// Full map, or an entry another CPU made since our lookup.
		v = bpf_map_lookup_elem(&drops, key);
		if (v)
			*v += n;
		else
			count(ERR_KEYS, n);
	}
}

// walk_stack returns the stack id of the current kernel stack, or -1 (and
// counts the failure) when it could not be recorded.
static __always_inline __s32 walk_stack(__u64 *ctx)
{
	long id = bpf_get_stackid(ctx, &stacks, 0);
	count(STACK_WALKS, 1);
	if (id < 0) {
		count(ERR_STACKS, 1);
		return -1;
	}
	return id;
}

SEC("tp_btf/kfree_skb")
int on_kfree_skb(__u64 *ctx)
{
	// A tp_btf argument is a trusted kernel pointer: plain loads are
	// allowed (the JIT makes them fault-safe) and much cheaper than
	// bpf_probe_read_kernel; the offsets are still CO-RE relocated.
	struct sk_buff *skb = (struct sk_buff *)ctx[0];
	struct net_device *dev = skb->dev;
	struct drop_key key = {};

	// The receiving device for RX drops; skb_iif once dev was cleared
	// (then the namespace is unknown). Interface indexes are per network
	// namespace, so the namespace is part of the key.
	if (dev) {
		key.ifindex = dev->ifindex;
		// possible_net_t is empty on kernels built without CONFIG_NET_NS.
		if (bpf_core_field_exists(dev->nd_net.net))
			key.netns = dev->nd_net.net->ns.inum;
	} else {
		key.ifindex = skb->skb_iif;
	}
	if (filter_ifindex && (key.ifindex != filter_ifindex || key.netns != filter_netns))
		return 0;

	key.location = ctx[1];
	if (has_reason)
		key.reason = (__u32)ctx[2];
	key.stack_id = -1;
	int want_stack = with_stacks && (stack_unspecified || !has_reason || key.reason != unspecified_reason);

	__u32 zero = 0;
	struct last_drop *l = bpf_map_lookup_elem(&last_drops, &zero);
	if (!l)
		return 0;
	if (want_stack) {
		// A zero location never matches: the first drop is walked.
		if (l->walked.location == key.location && l->walked.reason == key.reason &&
		    l->walked.ifindex == key.ifindex && l->walked.netns == key.netns && ++l->since_walk < stack_every) {
			key.stack_id = l->walked.stack_id;
		} else {
			key.stack_id = walk_stack(ctx);
			l->walked = key;
			l->since_walk = 0;
		}
	}
	if (l->pending && l->key.reason == key.reason && l->key.ifindex == key.ifindex &&
	    l->key.location == key.location && l->key.stack_id == key.stack_id && l->key.netns == key.netns) {
		l->pending++;
		return 0;
	}
	if (l->pending)
		flush(&l->key, l->pending);
	l->key = key;
	l->pending = 1;
	return 0;
}
