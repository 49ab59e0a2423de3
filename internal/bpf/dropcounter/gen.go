package dropcounter

// Regenerate with `make generate` (needs Debian clang, llvm and libbpf-dev).
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror" -target bpfel -type drop_key -type last_drop bpf drops.bpf.c -- -I/usr/include/x86_64-linux-gnu
