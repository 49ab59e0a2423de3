package trialsecret

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestTLS: the server pair loads, and its certificate verifies against
// ca.crt for the Service's name (what the ServiceMonitor checks), not for
// another name.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	if err := WriteTLS(dir); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.crt holds no certificate")
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "slowpath-agent.slowpath.svc"}); err != nil {
		t.Errorf("verify for the Service name: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.com"}); err == nil {
		t.Error("certificate verifies for example.com")
	}
	for _, f := range []string{"tls.key", "ca.crt"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", f, st.Mode(), err)
		}
	}
}

// TestAuth: web.yml's hash is the password's, and two runs differ.
func TestAuth(t *testing.T) {
	var passwords []string
	for range 2 {
		dir := t.TempDir()
		if err := WriteAuth(dir); err != nil {
			t.Fatal(err)
		}
		pw, _ := os.ReadFile(filepath.Join(dir, "password"))
		web, _ := os.ReadFile(filepath.Join(dir, "web.yml"))
		m := regexp.MustCompile(`(?m)^  prometheus: (\S+)$`).FindSubmatch(web)
		if m == nil {
			t.Fatalf("web.yml has no user prometheus:\n%s", web)
		}
		if err := bcrypt.CompareHashAndPassword(m[1], pw); err != nil || len(pw) < 32 {
			t.Errorf("hash does not match the %d-byte password: %v", len(pw), err)
		}
		passwords = append(passwords, string(pw))
	}
	if passwords[0] == passwords[1] {
		t.Error("the same password twice")
	}
}
