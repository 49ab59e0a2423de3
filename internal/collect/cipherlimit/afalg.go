package cipherlimit

import (
	"encoding/binary"
	"errors"
	"fmt"

	"unsafe"

	"golang.org/x/sys/unix"
)

// afalg is one AF_ALG skcipher operation socket for xts(aes)
// (Documentation/crypto/userspace-if.rst): a bound algorithm socket with
// the key set, and the accepted operation socket data goes through.
type afalg struct{ tfm, op int }

func newAFALG(key []byte) (*afalg, error) {
	tfm, err := unix.Socket(unix.AF_ALG, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EAFNOSUPPORT) {
			return nil, fmt.Errorf("AF_ALG: %w (this kernel has no CONFIG_CRYPTO_USER_API_SKCIPHER: modprobe algif_skcipher)", err)
		}
		return nil, fmt.Errorf("AF_ALG socket: %w", err)
	}
	if err := unix.Bind(tfm, &unix.SockaddrALG{Type: "skcipher", Name: "xts(aes)"}); err != nil {
		unix.Close(tfm)
		return nil, fmt.Errorf("AF_ALG bind skcipher xts(aes): %w (modprobe algif_skcipher)", err)
	}
	if err := unix.SetsockoptString(tfm, unix.SOL_ALG, unix.ALG_SET_KEY, string(key)); err != nil {
		unix.Close(tfm)
		return nil, fmt.Errorf("AF_ALG set key: %w", err)
	}
	// accept4 by hand: x/sys/unix.Accept turns the empty peer address an
	// AF_ALG socket returns into ECONNABORTED.
	r, _, errno := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(tfm), 0, 0, unix.SOCK_CLOEXEC, 0, 0)
	op := int(r)
	if errno != 0 {
		err = errno
		unix.Close(tfm)
		return nil, fmt.Errorf("AF_ALG accept: %w", err)
	}
	return &afalg{tfm: tfm, op: op}, nil
}

func afalgAvailable(key []byte) error {
	a, err := newAFALG(key)
	if err != nil {
		return err
	}
	defer a.close()
	return a.encrypt(make([]byte, 512), 0)
}

// encrypt sends one sector with its plain64 IV (the sector number, little
// endian, zero-padded to 16 bytes) and reads the ciphertext back.
func (a *afalg) encrypt(buf []byte, sector uint64) error {
	// Control messages: ALG_SET_OP (u32) and ALG_SET_IV (struct af_alg_iv:
	// u32 ivlen, then the IV), include/uapi/linux/if_alg.h.
	opLen, ivLen := 4, 4+16
	oob := make([]byte, unix.CmsgSpace(opLen)+unix.CmsgSpace(ivLen))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.SOL_ALG, unix.ALG_SET_OP
	h.SetLen(unix.CmsgLen(opLen))
	binary.NativeEndian.PutUint32(oob[unix.CmsgLen(0):], unix.ALG_OP_ENCRYPT)
	off := unix.CmsgSpace(opLen)
	h = (*unix.Cmsghdr)(unsafe.Pointer(&oob[off]))
	h.Level, h.Type = unix.SOL_ALG, unix.ALG_SET_IV
	h.SetLen(unix.CmsgLen(ivLen))
	iv := oob[off+unix.CmsgLen(0):]
	binary.NativeEndian.PutUint32(iv, 16)
	binary.LittleEndian.PutUint64(iv[4:], sector)
	if err := unix.Sendmsg(a.op, buf, oob, nil, 0); err != nil {
		return fmt.Errorf("AF_ALG sendmsg: %w", err)
	}
	for got := 0; got < len(buf); {
		n, err := unix.Read(a.op, buf[got:])
		if err != nil {
			return fmt.Errorf("AF_ALG read: %w", err)
		}
		if n == 0 {
			return errors.New("AF_ALG read: short")
		}
		got += n
	}
	return nil
}

func (a *afalg) close() {
	unix.Close(a.op)
	unix.Close(a.tfm)
}
