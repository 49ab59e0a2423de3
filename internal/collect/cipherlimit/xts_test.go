package cipherlimit

import (
	"bytes"
	"crypto/aes"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"golang.org/x/crypto/xts"
)

// IEEE 1619-2007 Annex B, vector 1: both keys zero, data unit 0, 32 zero
// bytes.
func TestXTSVector1(t *testing.T) {
	x, err := newXTS(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	x.encryptSector(buf, 0)
	if got, want := hex.EncodeToString(buf), "917cf69ebd68b2ec9b9fe9a3eadda692cd43d2f59598ed858c02c2652fbf922e"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// The reference: golang.org/x/crypto/xts (slow, byte-wise, but correct),
// for both key sizes and both sector sizes dm-crypt uses.
func TestXTSMatchesReference(t *testing.T) {
	for _, keyLen := range []int{32, 64} {
		for _, sector := range []int{512, 4096} {
			key := make([]byte, keyLen)
			rand.Read(key)
			plain := make([]byte, sector)
			rand.Read(plain)
			ref, err := xts.NewCipher(aes.NewCipher, key)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]byte, sector)
			ref.Encrypt(want, plain, 123456789)
			x, _ := newXTS(key)
			got := bytes.Clone(plain)
			x.encryptSector(got, 123456789)
			if !bytes.Equal(got, want) {
				t.Errorf("key %d bytes, sector %d: differs from x/crypto/xts", keyLen, sector)
			}
		}
	}
	if _, err := newXTS(make([]byte, 48)); err == nil {
		t.Error("48-byte key accepted")
	}
}
