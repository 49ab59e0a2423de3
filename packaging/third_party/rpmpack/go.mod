module github.com/google/rpmpack

go 1.22

toolchain go1.24.4

require (
	github.com/cavaliergopher/cpio v1.0.1
	github.com/google/go-cmp v0.7.0
	github.com/klauspost/compress v1.18.0
	github.com/klauspost/pgzip v1.2.6
	github.com/ulikunitz/xz v0.5.12
)
