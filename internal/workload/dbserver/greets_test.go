package dbserver

import (
	"net"
	"path/filepath"
	"testing"
)

// TestGreets: a socket that listens but whose server does not accept yet
// (mariadbd between creating its socket and the end of its start-up) is
// not ready; one that sends a handshake, or an error packet, is.
func TestGreets(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply []byte // nil: never accepted
		want  bool
	}{
		{"listening, not accepting", nil, false},
		{"handshake v10", []byte{0x5b, 0, 0, 0, 10, '1', '0'}, true},
		{"error packet", []byte{0x17, 0, 0, 0, 0xff, 0x69, 0x04}, true},
		{"closed without a word", []byte{}, false},
		{"not MySQL", []byte("HTTP/1.1 400\r\n"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "s")
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if tc.reply != nil {
				go func() {
					c, err := l.Accept()
					if err != nil {
						return
					}
					c.Write(tc.reply)
					c.Close()
				}()
			}
			if got := greets(sock); got != tc.want {
				t.Errorf("greets = %v, want %v", got, tc.want)
			}
		})
	}
	if greets(filepath.Join(t.TempDir(), "none")) {
		t.Error("greets on no socket = true")
	}
}
